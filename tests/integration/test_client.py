"""The Python client for the HTTP API (episodic.adapters.client): the sync
`Client` and the async `AsyncClient` answer the same view types, with the
same values, as the in-process `Memory`, so code moves between them by
changing one line. Against the real app: in process (FastAPI's TestClient
for the sync client, httpx's ASGI transport for the async one), and one
real `episodic api` process, which also runs the README's client quick
start as written."""

from __future__ import annotations

import contextlib
import io
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import httpx
import pytest

from episodic.adapters.client import AsyncClient, Client
from episodic.adapters.embedded import Memory
from episodic.config import Settings
from episodic.errors import NotFoundError
from episodic.service.views import EpisodeDetail, FactView, ForgetReceipt, Hit
from tests.integration.api_support import api_client, api_server, new_key
from tests.integration.helpers import settings_at
from tests.integration.test_forget_faces import turns

README = Path(__file__).resolve().parents[2] / "README.md"
pytestmark = pytest.mark.usefixtures("prefect_harness")


@dataclass
class Store:
    memory: Memory
    key: str  # alice's, read and write


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, prefect_harness: None) -> Iterator[Store]:
    """Alice and Bob, consolidated in process."""
    home = tmp_path_factory.mktemp("client") / "home"
    with Memory(settings_at(home)) as memory:
        memory.add("alice", turns("alice"))
        memory.add("bob", turns("bob"))
        memory.consolidate(flush=True)
        yield Store(memory, new_key(memory, "alice"))


def _client(store: Store, key: str | None = None) -> Client:
    # FastAPI's TestClient speaks httpx's API (it subclasses a vendored httpx.Client)
    return Client(key=key or store.key, http=cast(httpx.Client, api_client(store.memory)))


def _json(views: list[Any]) -> list[dict[str, Any]]:
    return [v.as_json() for v in views]


def test_sync_client_answers_what_memory_answers(store: Store) -> None:
    m = store.memory
    with _client(store) as c:
        assert c.user_id == "alice"
        facts = c.facts("alice")
        assert facts and all(isinstance(f, FactView) for f in facts)
        assert _json(facts) == _json(m.facts("alice"))
        assert _json(c.facts("alice", include_inactive=True)) == _json(
            m.facts("alice", include_inactive=True)
        )
        then = m.facts("alice", as_of=m.facts("alice")[0].valid_from)
        assert _json(c.facts("alice", as_of=m.facts("alice")[0].valid_from)) == _json(then)
        assert _json(c.episodes("alice")) == _json(m.episodes("alice"))
        assert _json(c.episodes("alice", limit=2)) == _json(m.episodes("alice", limit=2))
        first = m.episodes("alice")[0].episode_id
        detail = c.episode("alice", first[:10])
        assert isinstance(detail, EpisodeDetail) and detail == m.episode("alice", first)
        fid = facts[0].fact_id
        assert (
            c.history("alice", fid) == c.fact_history("alice", fid) == m.fact_history("alice", fid)
        )
        assert c.reflections("alice") == m.reflections("alice")
        got = {s.stream_id: s for s in c.status("alice")}
        for s in m.status("alice"):
            assert got[s.stream_id].raw_turns == s.raw_turns
            assert got[s.stream_id].watermark == s.watermark
        hits = c.search("alice", "where does the user live", k=5)
        assert hits and all(isinstance(h, Hit) for h in hits)
        mine = m.search("alice", "where does the user live", k=5, record=False)
        assert [(h.kind, h.item_id) for h in hits] == [(h.kind, h.item_id) for h in mine]
        assert [h.text for h in c.search("alice", "Berlin", kinds=["facts"])] == [
            h.text for h in m.search("alice", "Berlin", kinds=["facts"], record=False)
        ]


def test_sync_client_errors_are_memorys(store: Store) -> None:
    bob_fact = store.memory.facts("bob")[0].fact_id
    with _client(store) as c:
        with pytest.raises(NotFoundError):
            c.fact_history("alice", bob_fact)  # another user's id: as a missing one
        with pytest.raises(NotFoundError):
            c.episode("alice", "no-such-episode")
        with pytest.raises(NotFoundError):
            c.forget("alice", fact=bob_fact)
        with pytest.raises(PermissionError, match="belongs to user 'alice'"):
            c.facts("bob")  # a key acts for its user only: refused before any request
        with pytest.raises(ValueError):
            c.search("alice", "x", kinds=["nonsense"])
        with pytest.raises(ValueError, match="one turn, episode or fact"):
            c.forget("alice", turn="a", fact="b")
    with _client(store, key="ep_0000000000000000_" + "x" * 30) as c:
        with pytest.raises(PermissionError):
            c.facts("alice")
    reader = new_key(store.memory, "alice", ("read",))
    with _client(store, key=reader) as c:
        assert c.facts("alice")
        with pytest.raises(PermissionError, match="403"):
            c.add("alice", [{"role": "user", "text": "hi"}])
    assert store.memory.facts("bob")[0].fact_id == bob_fact


def test_async_client_over_asgi_corrects_and_forgets(store: Store) -> None:
    from episodic.adapters.http.app import create_app

    m = store.memory
    key = new_key(m, "bob")

    async def run() -> dict[str, Any]:
        transport = httpx.ASGITransport(app=create_app(m))
        async with (
            httpx.AsyncClient(transport=transport, base_url="http://app") as http,
            AsyncClient(key=key, http=http) as c,
        ):
            out: dict[str, Any] = {"user": await c.user()}
            out["facts"] = await c.facts("bob")
            out["episodes"] = await c.episodes("bob")
            out["hits"] = await c.search("bob", "Postgres", k=3)
            fid = out["facts"][0].fact_id
            out["invalidated"] = await c.invalidate_fact("bob", fid)
            out["restored"] = await c.restore_fact("bob", fid)
            out["history"] = await c.history("bob", fid)
            out["reworded"] = await c.reword_fact("bob", fid, "Bob's team runs Postgres 17")
            for wrong in ("", "x" * 501):  # empty, or longer than a fact may be (one limit)
                with pytest.raises(ValueError, match="422"):
                    await c.reword_fact("bob", out["reworded"].fact_id, wrong)
            for fix in (
                c.reword_fact("bob", fid, "something else"),
                c.invalidate_fact("bob", fid),  # its successor is what is believed
                c.restore_fact("bob", fid),  # would make two active
            ):
                with pytest.raises(ValueError, match="400.*superseded"):
                    await fix
            out["added"] = await c.add(
                "bob", [{"role": "user", "text": "ping", "id": "late-1"}], stream_id="late"
            )
            out["forgot"] = await c.forget("bob", fact=fid)
            out["after"] = await c.facts("bob", include_inactive=True)
            with pytest.raises(NotFoundError):
                await c.forget("bob", fact=fid)
            with pytest.raises(PermissionError):
                await c.reflections("alice")
            return out

    out = anyio.run(run)
    assert out["user"] == "bob"
    assert out["episodes"] and all(
        isinstance(e, type(m.episodes("bob")[0])) for e in out["episodes"]
    )
    assert out["hits"] and all(isinstance(h, Hit) for h in out["hits"])
    assert out["invalidated"].status == "deleted" and out["restored"].status == "active"
    assert [e.event for e in out["history"]][-2:] == ["DELETE", "ADD"]
    reworded = out["reworded"]
    assert (reworded.status, reworded.supersedes) == ("active", out["facts"][0].fact_id)
    assert reworded.text == "Bob's team runs Postgres 17"
    assert reworded.fact_id in {f.fact_id for f in out["after"]}  # forgetting the old kept it
    assert out["added"].accepted == 1
    assert {s.stream_id for s in m.status("bob")} >= {"late"}
    receipt = out["forgot"]
    assert isinstance(receipt, ForgetReceipt) and receipt.kind == "fact" and receipt.total >= 1
    assert receipt.actor.startswith("api:")
    assert out["facts"][0].fact_id not in {f.fact_id for f in out["after"]}
    assert _json(out["after"]) == _json(m.facts("bob", include_inactive=True))


def quickstart() -> str:
    section = README.read_text(encoding="utf-8").split("## See and correct what it remembers")[1]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the README lost its client quick start"
    return found.group(1)


@pytest.mark.slow
def test_real_server_runs_the_readme_quickstart(tmp_path: Path) -> None:
    """The README's client block, as written, against a real `episodic api`."""
    code = quickstart()
    assert '"http://127.0.0.1:8700"' in code and "Client(" in code
    # as written: the default embedder, not the suite's hash one
    default = {"EPISODIC_EMBEDDER": str(Settings.model_fields["embedder"].default)}
    with api_server(tmp_path / "home", env=default) as srv:
        key = srv.key("alice")
        code = code.replace('"http://127.0.0.1:8700"', repr(srv.url))
        out = io.StringIO()
        scope: dict[str, object] = {}
        os.environ["EPISODIC_KEY"] = key
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, str(README), "exec"), scope)
        finally:
            os.environ.pop("EPISODIC_KEY", None)
        lines = out.getvalue().strip().splitlines()
        # the hits, the facts, then the receipt of the forgotten fact
        assert lines[0].startswith("fact ") and "Berlin" in lines[0], lines  # the fact first
        assert "Berlin" in lines[-2], lines
        assert lines[-1].startswith("fact "), lines
        # the same server through a second client: the fact is gone
        with Client(srv.url, key=key) as c:
            assert all("Berlin" not in f.text for f in c.facts("alice", include_inactive=True))
            receipt = c.forget("alice")
            assert receipt.kind == "user" and receipt.counts["raw_turns"] >= 2
    with Memory(settings_at(tmp_path / "home")) as m:
        assert m.status("alice") == [] and m.facts("alice", include_inactive=True) == []
