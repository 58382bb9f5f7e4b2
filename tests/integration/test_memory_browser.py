"""The memory browser (/ui) in a real headless Chromium against a real
`episodic api` process on a consolidated sample (the bundled demo for user
`demo`, a synthetic stream with a canary for user `bob`): every page is
clicked through and checked against the store (`Memory` calls), one user's
pages never show the other's data, a fact is invalidated and restored, a
fact and a turn are forgotten, and bob forgets everything, all through the
pages; Swagger UI at /docs renders without the network.

Screenshots land in the test's tmp dir; with EPISODIC_UI_SCREENSHOTS naming
a directory (docs/img for the README) they are copied there, shrunk to a
palette PNG."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from episodic.adapters.embedded import Memory
from episodic.samples import DEMO_TRANSCRIPT
from flows.reflect import reflect
from tests.integration.api_support import Server, api_server
from tests.integration.chromium import headless_chromium
from tests.integration.helpers import settings_at, synthetic_stream, write_jsonl

pytestmark = [pytest.mark.browser, pytest.mark.slow]
CANARY = "bobcanary"  # in bob's turns only


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    with headless_chromium(tmp_path, "1360,900") as driver:
        yield driver


@pytest.fixture
def home(tmp_path: Path, prefect_harness: None) -> Path:
    """The demo sample and bob's stream, consolidated, with reflections."""
    home = tmp_path / "home"
    with Memory(settings_at(home)) as m:
        m.ingest(DEMO_TRANSCRIPT, "jsonl")
        bob = synthetic_stream(user="bob", stream="bob-chat", n_per_topic=4)
        for t in bob:
            t["text"] = f"{t['text']} {CANARY}"
        m.ingest(write_jsonl(tmp_path / "bob.jsonl", bob), "jsonl")
        m.consolidate(flush=True)
        reflect(user="demo", force=True, memory=m)
    return home


class Page:
    """The browser on one server, with the few moves the tests make."""

    def __init__(self, driver: Any, srv: Server, shots: Path) -> None:
        self.d = driver
        self.srv = srv
        self.shots = shots

    def go(self, path: str) -> str:
        self.d.get(self.srv.url + path)
        return self.body()

    def body(self) -> str:
        from selenium.webdriver.common.by import By

        return str(self.d.find_element(By.TAG_NAME, "body").text)

    def el(self, css: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.d.find_element(By.CSS_SELECTOR, css)

    def els(self, css: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return list(self.d.find_elements(By.CSS_SELECTOR, css))

    def click(self, css: str) -> str:
        """Click a link or button and wait for the page it opens."""
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.support.ui import WebDriverWait

        # A mark on the old window: it is gone once the new page has loaded.
        # Polling the old element instead can hit chromedriver mid-navigation.
        self.d.execute_script("window.__leaving = true")
        self.el(css).click()
        WebDriverWait(self.d, 60, ignored_exceptions=(WebDriverException,)).until(
            lambda d: d.execute_script(
                "return !window.__leaving && document.readyState === 'complete'"
            )
        )
        return self.body()

    def login(self, key: str) -> str:
        self.go("/ui/login")
        self.el("#key").send_keys(key)
        return self.click("#login")

    def logout(self) -> None:
        self.click("#logout")

    def shot(self, name: str) -> None:
        self.d.save_screenshot(str(self.shots / f"ui-{name}.png"))


def test_browser_pages_match_the_store_and_act_on_it(
    tmp_path: Path, home: Path, browser: Any
) -> None:
    shots = tmp_path / "shots"
    shots.mkdir()
    with api_server(home) as srv, Memory(settings_at(home)) as m:
        demo_key, bob_key = srv.key("demo"), srv.key("bob")
        reader = srv.key("demo", ("read",))
        ui = Page(browser, srv, shots)
        # not logged in: the login form; a bad key stays there
        assert "API key" in ui.go("/ui/facts") and browser.current_url.endswith("/ui/login")
        assert "not valid" in ui.login("ep_0000000000000000_" + "x" * 30)
        # a bad address: the login page first under /ui (a page once logged
        # in, below), JSON under /v1
        got = httpx.get(srv.url + "/ui/search?q=x&k=-1")
        assert (got.status_code, got.headers["location"]) == (303, "/ui/login")
        auth = {"Authorization": f"Bearer {demo_key}"}
        got = httpx.get(srv.url + "/v1/search?q=x&k=-1", headers=auth)
        assert got.status_code == 422 and got.json()["detail"][0]["loc"] == ["query", "k"]
        _check_demo_pages(ui, m)
        ui.login(demo_key)
        _act_as_demo(ui, m)
        ui.logout()
        # a read-only key sees, and can only look
        ui.login(reader)
        fid = m.facts("demo")[0].fact_id
        body = ui.go(f"/ui/confirm?action=invalidate&target={fid}")
        assert "no write scope" in body and not ui.els("#confirm")
        assert not ui.els("#forget-everything") and "Forget everything" not in ui.go("/ui/overview")
        ui.logout()
        _bob_sees_only_bob_then_forgets_everything(ui, m, bob_key)
        # /docs: Swagger UI from the package, rendered with no network
        ui.go("/docs")
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(browser, 60).until(lambda d: "/v1/search" in ui.body())
        assert "/v1/memory" in ui.body()
        ui.shot("docs")
    _keep(shots)


def _check_demo_pages(ui: Page, m: Memory) -> None:
    ui.login(ui.srv.key("demo"))
    # overview: the streams and counts of memory.status and friends
    status = m.status("demo")
    ui.go("/ui/overview")
    assert ui.el("#who-user").text == "demo"
    assert int(ui.el("#n-turns").text) == sum(s.raw_turns for s in status) == 110
    assert int(ui.el("#n-backlog").text) == sum(s.unprocessed_turns for s in status)
    assert int(ui.el("#n-episodes").text) == len(m.episodes("demo"))
    assert int(ui.el("#n-facts").text) == len(m.facts("demo"))
    assert int(ui.el("#n-reflections").text) == len(m.reflections("demo"))
    rows = ui.els("#streams tbody tr")
    assert [r.find_element("css selector", ".stream").text for r in rows] == [
        s.stream_id for s in status
    ]
    assert all("Completed" in r.text for r in rows)
    ui.shot("overview")
    # timeline: every episode, on its lane and in the table, its cut reason shown
    eps = m.episodes("demo")
    ui.click("#nav-timeline")
    assert len(ui.els("svg.lane rect.ep")) == len(eps)
    table = ui.els("#episodes tbody tr[data-episode]")
    assert [r.get_attribute("data-episode") for r in table] == [e.episode_id for e in eps[::-1]]
    for row, e in zip(table, eps[::-1], strict=True):
        assert row.find_element("css selector", ".reason").text == e.reason
    for label in ui.els("svg.lane text.cut"):  # wide blocks name their cut on the lane
        assert any(e.reason.startswith(label.text.removesuffix("…")) for e in eps), label.text
    ui.shot("timeline")
    # an episode: clicked on the timeline; turns, cut reason, signals, summary, facts
    ep = eps[0]
    ui.click(f'#episodes tr[data-episode="{ep.episode_id}"] a')
    detail = m.episode("demo", ep.episode_id)
    assert ui.el("#summary").text == (detail.summary or "(no summary)")
    assert ui.el("#reason").text == detail.reason
    turns = ui.els("#turns tbody tr")
    assert [r.get_attribute("data-turn") for r in turns] == [t.turn_id for t in detail.turns]
    assert len(ui.els("#signals tbody tr")) == len(detail.signal_scores)
    cited = [
        f for f in m.facts("demo", include_inactive=True) if ep.episode_id in f.source_episode_ids
    ]
    assert len(ui.els("#episode-facts tbody tr")) == len(cited)
    ui.shot("episode")
    # facts: active, then every status, then as of a date; a fact's history
    ui.click("#nav-facts")
    assert [r.get_attribute("data-fact") for r in ui.els("#facts tbody tr[data-fact]")] == [
        f.fact_id for f in sorted(m.facts("demo"), key=lambda f: f.valid_from, reverse=True)
    ]
    every = m.facts("demo", include_inactive=True)
    ui.go("/ui/facts?status=all")
    assert {r.get_attribute("data-fact") for r in ui.els("#facts tbody tr[data-fact]")} == {
        f.fact_id for f in every
    }
    assert {"superseded"} <= {f.status for f in every}
    ui.shot("facts")
    from datetime import UTC, datetime

    ui.go("/ui/facts?as_of=2025-03-12")
    then = m.facts("demo", as_of=datetime(2025, 3, 12, 23, 59, 59, tzinfo=UTC))
    assert {r.get_attribute("data-fact") for r in ui.els("#facts tbody tr[data-fact]")} == {
        f.fact_id for f in then
    }
    assert "believed true on 2025-03-12" in ui.el("#as-of-note").text
    ui.go("/ui/facts?as_of=notadate")  # said why, and claims no date
    assert "is not a date" in ui.el("p.error").text and not ui.els("#as-of-note")
    for f in every:  # each fact's page is that fact's, a successor's too
        ui.go(f"/ui/facts/{f.fact_id[:10]}")
        assert (ui.el("#fact-text").text, ui.el("#fact-status").text) == (f.text, f.status)
    old = next(f for f in every if f.status == "superseded")
    changed = next(f for f in every if f.supersedes == old.fact_id)
    ui.go(f"/ui/facts?status=all&q={changed.text.split()[-1]}")
    ui.click(f'#facts tr[data-fact="{changed.fact_id}"] a')
    assert ui.el("#fact-text").text == changed.text
    history = m.fact_history("demo", changed.fact_id)
    assert [h.event for h in history][:2] == ["ADD", "UPDATE"]  # the chain, from the old one
    rows = ui.els("#history tbody tr")
    assert len(rows) == len(history)
    assert [r.find_element("css selector", ".event").text for r in rows] == [
        h.event for h in history
    ]
    ui.shot("fact-history")
    # search: the shipped search's hits, each score part shown, and the time
    ui.click("#nav-search")
    ui.el("#q").send_keys("where does the user live")
    ui.click("#go")
    hits = m.search("demo", "where does the user live", k=10, record=False)
    shown = ui.els("#hits tbody tr")
    ids = [r.get_attribute("data-item") for r in shown]
    # the same ranking (near-ties at the tail may swap as the clock moves on)
    assert len(ids) == len(hits) and ids[:5] == [h.item_id for h in hits][:5]
    assert len(set(ids) & {h.item_id for h in hits}) >= len(hits) - 2
    first = shown[0].find_elements("css selector", "td")
    assert first[2].text == f"{hits[0].score:.3f}" and first[3].text == f"{hits[0].relevance:.3f}"
    assert (
        first[4].text == f"{hits[0].recency:.3f}" and first[5].text == f"{hits[0].importance:.3f}"
    )
    assert " ms" in ui.el("#took").text
    ui.shot("search")
    # reflections, and an evidence link to its episode
    refl = m.reflections("demo")
    ui.click("#nav-reflections")
    assert len(ui.els("article.reflection")) == len(refl) > 0
    ui.shot("reflections")
    ui.click("a.evidence")
    assert ui.el("#episode-id").text == refl[0].evidence_episode_ids[0][:12]
    ui.logout()


def _act_as_demo(ui: Page, m: Memory) -> None:
    fact = m.facts("demo")[0]
    # invalidate, with its confirmation; then restore
    ui.go(f"/ui/facts/{fact.fact_id}")
    body = ui.click("#invalidate")
    assert "Are you sure?" in body and fact.text in ui.el("#subject").text
    ui.shot("confirm")
    assert "Invalidated." in ui.click("#confirm")
    assert ui.el("#fact-status").text == "deleted"
    now = {f.fact_id: f for f in m.facts("demo", include_inactive=True)}[fact.fact_id]
    assert now.status == "deleted" and fact.fact_id not in {f.fact_id for f in m.facts("demo")}
    assert m.fact_history("demo", fact.fact_id)[-1].decided_by.startswith("user-correction")
    ui.click("#restore")
    assert "Restored." in ui.click("#confirm")
    assert fact.fact_id in {f.fact_id for f in m.facts("demo")}
    # reword another fact: typed on its page, a new fact supersedes it
    other = m.facts("demo")[1]
    ui.go(f"/ui/facts/{other.fact_id}")
    box = ui.el("#wording")
    box.clear()
    box.send_keys("User prefers squash merges and small PRs")
    assert "Reworded" in ui.click("#reword")
    assert ui.el("#fact-text").text == "User prefers squash merges and small PRs"
    (new,) = [f for f in m.facts("demo") if f.supersedes == other.fact_id]
    assert new.text == "User prefers squash merges and small PRs"
    assert other.fact_id not in {f.fact_id for f in m.facts("demo")}
    assert m.fact_history("demo", other.fact_id)[-1].decided_by.startswith("user-correction:ui")
    # forget the fact
    ui.go(f"/ui/facts/{fact.fact_id}")
    ui.click("#forget-fact")
    body = ui.click("#confirm")
    assert "Fact forgotten" in body and ui.el("#audit-id").text
    assert fact.fact_id not in {f.fact_id for f in m.facts("demo", include_inactive=True)}
    # forget a turn, from its episode's page
    ep = m.episodes("demo")[-1]
    turn = m.episode("demo", ep.episode_id).turns[0]
    ui.go(f"/ui/episodes/{ep.episode_id}")
    ui.click(f'#turns tr[data-turn="{turn.turn_id}"] a')
    assert turn.text[:30] in ui.el("#subject").text
    assert "Turn forgotten" in ui.click("#confirm")
    ui.shot("forgotten")
    assert m.rt.raw.by_ids("demo", [turn.turn_id])[0].text == "[forgotten]"


def _bob_sees_only_bob_then_forgets_everything(ui: Page, m: Memory, bob_key: str) -> None:
    demo_texts = [e.summary for e in m.episodes("demo") if e.summary][:5]
    demo_ep = m.episodes("demo")[0].episode_id
    demo_fact = m.facts("demo")[0].fact_id
    ui.login(bob_key)
    assert ui.el("#who-user").text == "bob"
    pages = ["/ui/overview", "/ui/timeline", "/ui/facts?status=all", "/ui/reflections"]
    pages += ["/ui/search?q=where+does+the+user+live", "/ui/search?q=Berlin+Rex+Postgres"]
    for path in pages:
        body = ui.go(path)
        assert "coding-agent" not in body and "Berlin" not in body, path
        assert not any(t[:40] in body for t in demo_texts), path
    assert CANARY in ui.go("/ui/search?q=helm+staging")
    # an address that is no page, a bad one: a page that says so, still bob's
    assert ui.go("/ui/nowhere/at/all") and ui.el("#error").text == "No such page."
    ui.go("/ui/search?q=helm&k=-1")
    assert ui.el("#error").text.startswith("Not a valid request (k: ")
    assert ui.el("#who-user").text == "bob"
    for path in (f"/ui/episodes/{demo_ep}", f"/ui/facts/{demo_fact}"):
        assert "No such" in ui.go(path) and demo_fact not in ui.body()
    assert "No such" in ui.go(f"/ui/confirm?action=forget-fact&target={demo_fact}")
    # forget everything: typed confirmation, then the login page
    ui.go("/ui/overview")
    ui.click("#forget-everything")
    assert "This cannot be undone" in ui.body()
    ui.el("#typed").send_keys("not-bob")
    assert "did not match" in ui.click("#confirm")
    assert m.status("bob")
    ui.go("/ui/confirm?action=forget-user")
    ui.el("#typed").send_keys("bob")
    body = ui.click("#confirm")
    assert "User forgotten" in body and "keys were erased" in body
    assert m.status("bob") == [] and m.facts("bob", include_inactive=True) == []
    assert "API key" in ui.go("/ui/overview")  # the session is gone with the key
    # demo's memory is still there
    assert m.status("demo") and m.facts("demo")


def _keep(shots: Path) -> None:
    """Copy the screenshots to EPISODIC_UI_SCREENSHOTS (docs/img), as palette PNGs."""
    dest = os.environ.get("EPISODIC_UI_SCREENSHOTS")
    for png in shots.glob("*.png"):
        assert png.stat().st_size > 5_000, png
    if not dest:
        return
    from PIL import Image

    Path(dest).mkdir(parents=True, exist_ok=True)
    for png in sorted(shots.glob("*.png")):
        with Image.open(png) as im:
            small = im.convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
            small.save(Path(dest) / png.name, optimize=True)
