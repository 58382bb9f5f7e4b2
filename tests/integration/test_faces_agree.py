"""The three agent faces agree: for one consolidated store and one query,
`episodic search --json` (the CLI, a subprocess), `GET /v1/search` (the HTTP
app, in process) and the MCP tool `recall` (in process, through the SDK's
client) return the same hits: same ids, same order, same scores, same turns;
and the same facts and episodes.

Sound comparisons:
- a search notes its recalls, which move the recency and importance of the
  next search, so each face searches its own identical copy of the store
  (`shutil.copytree`), the first search there;
- recency is the one clock-dependent part of a score (0.5 ** (hours since
  the last access / 24), weight 0.1): a fact consolidated minutes ago loses
  up to 8e-6 of recency a second. The faces search seconds apart, so recency
  and score are compared within what the seconds between the first and the
  last search can move them; every other field exactly.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from episodic.adapters.embedded import Memory
from episodic.adapters.mcp.server import build_server
from episodic.retrieval import ScoreWeights
from episodic.service.memory import Memory as Service
from tests.integration.api_support import api_client, mcp_calls, new_key, run_cli, tool_data
from tests.integration.helpers import make_memory, settings_at, synthetic_stream

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

USER = "faces-user"
QUERY = "Berlin Rex"  # a turn, facts and reflections (theirs name Rex) among the first ten
K = 10
EPISODES = 10_000  # every episode, on each face


def _turns() -> list[dict[str, Any]]:
    turns = synthetic_stream(user=USER, stream="s1", gap_minutes=45)
    turns += [
        {"stream_id": "s1", "role": "user", "text": text, "ts": ts}
        for text, ts in (
            ("I live in Paris.", "2025-03-02T09:00:00+00:00"),
            ("I have a dog named Rex.", "2025-03-02T09:01:00+00:00"),
            ("I moved to Berlin.", "2025-03-09T09:00:00+00:00"),
            ("I use vim.", "2025-03-09T09:01:00+00:00"),
        )
    ]
    return turns


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with turns consolidated (episodes, facts with an update) and a
    reflection written; closed, so it can be copied."""
    from flows.reflect import reflect

    home = tmp_path_factory.mktemp("faces") / "home"
    with Memory(settings_at(home)) as memory:
        assert memory.add(USER, _turns()).accepted == 28
        memory.consolidate(USER, flush=True)
        reflect(user=USER, force=True, memory=memory)
        assert memory.facts(USER) and memory.reflections(USER)
        assert len(memory.episodes(USER)) >= 3
        _age(memory, days=3)
    return home


def _age(memory: Service, days: int) -> None:
    """Make the facts and reflections `days` older: their recency falls to
    0.5 ** days, and a recall (which resets it to 1) shows in the next
    search's scores, so a face searching after another's recalls disagrees."""
    from datetime import timedelta

    from storage import filters
    from storage.codec import to_naive

    every = memory.facts(USER, include_inactive=True)
    facts = [(f.fact_id, f.created_at) for f in every]
    thoughts = memory.reflections(USER, include_archived=True)
    refl = [(r.reflection_id, r.created_at) for r in thoughts]
    for table, column, items in (
        ("facts", "fact_id", facts),
        ("reflections", "reflection_id", refl),
    ):
        for item_id, created in items:
            memory.rt.store.update_where(
                table,
                filters.user(USER) & filters.eq(column, item_id),
                {"created_at": to_naive(created - timedelta(days=days))},
            )


def _copy(store: Path, to: Path) -> Path:
    shutil.copytree(store, to)
    return to


def _cli(home: Path, *args: str) -> Any:
    done = run_cli(home, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _timed(clock: list[float], search: Any) -> Any:
    """`search()`, noting the time before and after it."""
    clock.append(time.time())
    out = search()
    clock.append(time.time())
    return out


def _drift(seconds: float) -> float:
    """The most recency can lose in `seconds` (at its steepest, just accessed)."""
    return 1.0 - float(0.5 ** (seconds / 3600.0 / ScoreWeights().half_life_hours))


def _same_hits(a: list[dict[str, Any]], b: list[dict[str, Any]], seconds: float) -> None:
    assert [h["item_id"] for h in a] == [h["item_id"] for h in b]
    rec = _drift(seconds) + 2e-6  # and the rounding to 6 places
    score = ScoreWeights().recency_weight * rec + 2e-6
    for x, y in zip(a, b, strict=True):
        fixed = {k: v for k, v in x.items() if k not in ("recency", "score")}
        assert fixed == {k: v for k, v in y.items() if k not in ("recency", "score")}
        assert abs(x["recency"] - y["recency"]) <= rec, (x, y)
        assert abs(x["score"] - y["score"]) <= score, (x, y)


def test_search_agrees(store: Path, tmp_path: Path) -> None:
    homes = {face: _copy(store, tmp_path / face) for face in ("cli", "http", "mcp")}
    http_memory = make_memory(homes["http"])
    key = new_key(http_memory, USER)  # written before any search
    server = build_server(USER, make_memory(homes["mcp"]))
    clock: list[float] = []
    cli = _timed(clock, lambda: _cli(homes["cli"], "search", QUERY, "--user", USER, "--k", str(K)))
    with api_client(http_memory, key) as c:
        r = _timed(clock, lambda: c.get("/v1/search", params={"q": QUERY, "k": K}))
    assert r.status_code == 200, r.text
    http = r.json()
    traced = {"query": QUERY, "k": K, "trace": True}
    [result] = _timed(clock, lambda: mcp_calls(server, [("recall", traced)]))
    mcp = tool_data(result)["hits"]
    # something of every kind, or the comparison says little
    assert len(cli) == K and {h["kind"] for h in cli} == {"turn", "fact", "reflection"}, cli
    assert any(h["turns"] for h in cli) and any(h["provenance"] for h in cli)
    seconds = max(clock) - min(clock)
    _same_hits(cli, http, seconds)
    _same_hits(cli, mcp, seconds)


def test_facts_agree(store: Path) -> None:
    memory = make_memory(store)
    cli = _cli(store, "facts", "--user", USER)
    with api_client(memory, new_key(memory, USER)) as c:
        http = c.get("/v1/facts").json()
        http_all = c.get("/v1/facts", params={"all": "true"}).json()
    [result] = mcp_calls(build_server(USER, memory), [("facts", {})])
    mcp = tool_data(result)["facts"]
    assert cli and any("Berlin" in f["text"] for f in cli)
    assert cli == http == mcp
    cli_all = _cli(store, "facts", "--user", USER, "--all")
    assert len(cli_all) > len(cli) and cli_all == http_all


def test_episodes_agree(store: Path) -> None:
    memory = make_memory(store)
    cli = _cli(store, "episodes", "--user", USER)  # oldest first
    with api_client(memory, new_key(memory, USER)) as c:
        http = c.get("/v1/episodes", params={"limit": EPISODES}).json()  # newest first
    [result] = mcp_calls(build_server(USER, memory), [("episodes", {"recent": 1000})])
    mcp = tool_data(result)["episodes"]  # newest first
    assert len(cli) >= 3
    assert cli == http[::-1] == mcp[::-1]
    recent = _cli(store, "episodes", "--user", USER, "--limit", "2")
    assert recent == cli[-2:] == http[:2][::-1] == mcp[:2][::-1]
