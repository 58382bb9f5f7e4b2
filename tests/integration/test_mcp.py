"""The MCP face. In process (the SDK's client on the server object): each
tool is one Memory call answering its views, a refusal reaches the client
with its reason, the user is the server's. Over stdio (`episodic mcp`, the
SDK's stdio client): tools listed, remember twice (idempotent), then recall,
facts and episodes on a consolidated store answer what the store holds."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from episodic.adapters.mcp.server import build_server
from storage import filters
from tests.integration.api_support import CLI, ROOT, cli_env, mcp_calls, tool_data, tool_error
from tests.integration.helpers import make_memory, synthetic_stream


def _turns(user: str) -> list[dict[str, Any]]:
    """Four topics, then where the user lives and moves to (facts), then a
    closing turn a day later."""
    turns = synthetic_stream(user=user, stream="s1", gap_minutes=45)
    turns += [
        {"user_id": user, "stream_id": "s1", "role": "user", "text": text, "ts": ts}
        for text, ts in (
            ("I live in Paris.", "2025-03-02T09:00:00+00:00"),
            ("I moved to Berlin.", "2025-03-09T09:00:00+00:00"),
            ("See you tomorrow.", "2025-03-10T09:00:00+00:00"),
        )
    ]
    return turns


def test_refusals_reach_the_client_with_their_reason(tmp_path: Path) -> None:
    server = build_server("u1", make_memory(tmp_path / "home"))
    calls: list[tuple[str, dict[str, Any]]] = [
        ("recall", {"query": "x", "k": 0}),
        ("recall", {"query": "x", "k": 101}),
        ("recall", {"query": "   "}),
        ("episodes", {"recent": 0}),
        ("facts", {"as_of": "yesterday"}),
        ("remember", {"turns": [{"role": "user", "text": "x"}] * 1001}),
    ]
    said = []
    for (name, _), result in zip(calls, mcp_calls(server, calls), strict=True):
        # the SDK names the tool; a crash would say no more than that
        head, _, reason = tool_error(result).partition(": ")
        assert head == f"Error executing tool {name}" and reason, result
        said.append(reason)
    assert said[:4] == [
        "k must be between 1 and 100, got 0",
        "k must be between 1 and 100, got 101",
        "query is empty",
        "recent must be between 1 and 1000, got 0",
    ]
    assert "yesterday" in said[4] and "isoformat" in said[4]
    assert said[5] == "at most 1000 turns per call, got 1001"


def test_a_bad_item_is_quarantined_and_the_rest_of_the_batch_kept(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    batch: list[Any] = [{"role": "user", "text": "mcp hello", "stream_id": "m"}, 5, {"role": "x"}]
    [result] = mcp_calls(build_server("u1", memory), [("remember", {"turns": batch})])
    receipt = tool_data(result)
    assert receipt["accepted"] == 1
    assert [r["index"] for r in receipt["rejected"]] == [1, 2]
    assert [t.text for t in memory.rt.raw.by_ids("u1", receipt["turn_ids"])] == ["mcp hello"]
    assert len(memory.rt.raw.rejects.search().where(filters.user("u1").lance).to_list()) == 2


def test_tools_are_the_memory_calls_for_the_server_user(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    turns = synthetic_stream(user="alice", stream="s1", gap_minutes=45)  # names alice: ignored
    server = build_server("mcp-user", memory)
    first, second, facts, episodes = mcp_calls(
        server,
        [
            ("remember", {"turns": turns}),
            ("remember", {"turns": turns}),
            ("facts", {}),
            ("episodes", {"recent": 10}),
        ],
    )
    receipt = tool_data(first)
    assert receipt["accepted"] == len(turns) and receipt["rejected"] == []
    again = tool_data(second)
    assert (again["accepted"], again["duplicates"]) == (0, len(turns))
    assert again["turn_ids"] == receipt["turn_ids"]
    stored = memory.rt.raw.by_ids("mcp-user", receipt["turn_ids"])
    assert len(stored) == len(turns) and {t.source for t in stored} == {"mcp"}
    assert memory.rt.raw.by_ids("alice", receipt["turn_ids"]) == []
    assert tool_data(facts) == {"facts": []} and tool_data(episodes) == {"episodes": []}
    # turns only: no score part depends on the clock, so the hits are equal
    found = memory.search("mcp-user", "helm staging", k=4, record=False)
    [recall, traced] = mcp_calls(
        server,
        [
            ("recall", {"query": "helm staging", "k": 4}),
            ("recall", {"query": "helm staging", "k": 4, "trace": True}),
        ],
    )
    assert found and tool_data(traced) == {"hits": [h.as_json() for h in found]}
    # by default the brief form: what the agent reads, a fraction of the trace
    brief = tool_data(recall)["hits"]
    assert brief == [h.brief().as_json() for h in found]
    assert all(h["text"] and h["when"] and "rrf" not in h for h in brief)
    assert len(json.dumps(brief)) < len(json.dumps(tool_data(traced)["hits"])) / 2


@pytest.mark.usefixtures("prefect_harness")
def test_an_agent_corrects_a_fact_the_user_says_is_wrong(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    paris = {"role": "user", "text": "I live in Paris.", "ts": "2025-03-02T09:00:00Z"}
    for user in ("mcp-user", "other"):
        memory.add(user, [paris])
        memory.consolidate(user, flush=True)
    (old,) = memory.facts("mcp-user")
    (theirs,) = memory.facts("other")
    server = build_server("mcp-user", memory)
    reworded, gone, back, foreign, empty = mcp_calls(
        server,
        [
            ("reword_fact", {"fact_id": old.fact_id[:10], "text": "User lives in Lyon"}),
            ("invalidate_fact", {"fact_id": old.fact_id}),  # superseded now: refused below
            ("restore_fact", {"fact_id": old.fact_id}),
            ("invalidate_fact", {"fact_id": theirs.fact_id}),  # another user's: not found
            ("reword_fact", {"fact_id": old.fact_id, "text": "  "}),
        ],
    )
    new = tool_data(reworded)
    assert (new["text"], new["supersedes"], new["status"]) == (
        "User lives in Lyon", old.fact_id, "active",
    )  # fmt: skip
    assert [f.text for f in memory.facts("mcp-user")] == ["User lives in Lyon"]
    last = memory.fact_history("mcp-user", old.fact_id)[-1]
    assert (last.event, last.decided_by) == ("UPDATE", "user-correction:mcp")
    for refused in (gone, back, foreign, empty):
        assert tool_error(refused).partition(": ")[2], refused
    assert theirs.fact_id in tool_error(foreign) and "not stored" in tool_error(foreign)
    assert [f.fact_id for f in memory.facts("other")] == [theirs.fact_id]
    # invalidated and restored through the tools, each in the fact's history
    gone2, back2 = mcp_calls(
        server,
        [
            ("invalidate_fact", {"fact_id": new["fact_id"]}),
            ("restore_fact", {"fact_id": new["fact_id"]}),
        ],
    )
    assert (tool_data(gone2)["status"], tool_data(back2)["status"]) == ("deleted", "active")
    events = [(h.event, h.decided_by) for h in memory.fact_history("mcp-user", new["fact_id"])]
    assert events[-2:] == [("DELETE", "user-correction:mcp"), ("ADD", "user-correction:mcp")]


def _data(result: Any) -> dict[str, Any]:
    return tool_data(result)


async def _session(home: Path, user: str, work: Any, errlog: Any = sys.stderr) -> Any:
    params = StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "mcp", "--user", user], env=cli_env(home), cwd=str(ROOT)
    )
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_mcp_tools_over_stdio(tmp_path: Path) -> None:
    assert CLI[0] == sys.executable
    home = tmp_path / "home"
    turns = _turns("someone-else")

    async def remember(session: ClientSession) -> tuple[set[str], Any, Any]:
        names = {t.name for t in (await session.list_tools()).tools}
        first = _data(await session.call_tool("remember", {"turns": turns}))
        second = _data(await session.call_tool("remember", {"turns": turns}))
        return names, first, second

    names, first, second = anyio.run(_session, home, "mcp-user", remember)
    assert {"remember", "recall", "facts", "episodes"} <= names
    assert (first["accepted"], second["duplicates"]) == (len(turns), len(turns))

    memory = make_memory(home)
    memory.consolidate("mcp-user", flush=True)
    # read before the session: its recall bumps the facts' recall counts
    expected_facts = [f.as_json() for f in memory.facts("mcp-user")]
    expected_eps = [e.as_json() for e in memory.episodes("mcp-user")][::-1]
    assert any("Berlin" in f["text"] for f in expected_facts)

    async def read(session: ClientSession) -> tuple[Any, Any, Any, Any]:
        facts = _data(await session.call_tool("facts", {}))
        eps = _data(await session.call_tool("episodes", {"recent": 5}))
        every = _data(await session.call_tool("episodes", {"recent": 1000}))
        hits = _data(await session.call_tool("recall", {"query": "helm staging deploy", "k": 3}))
        return facts, eps, every, hits

    facts, eps, every, hits = anyio.run(_session, home, "mcp-user", read)
    assert facts == {"facts": expected_facts}
    assert every == {"episodes": expected_eps} and eps == {"episodes": expected_eps[:5]}
    assert 0 < len(hits["hits"]) <= 3 and any("helm" in h["text"] for h in hits["hits"])
    # the shipped search, brief: a turn hit comes with when it was said and its episode
    turn = next(h for h in hits["hits"] if h["kind"] == "turn")
    assert turn["when"] and turn["episode_id"] in {e["episode_id"] for e in expected_eps}

    async def other(session: ClientSession) -> Any:
        return _data(await session.call_tool("recall", {"query": "helm staging deploy", "k": 3}))

    assert anyio.run(_session, home, "someone-else", other)["hits"] == []


@pytest.mark.usefixtures("prefect_harness")
def test_the_server_tells_its_client_warnings_only(tmp_path: Path) -> None:
    """A client shows the server's stderr as its log: a consolidation's
    Prefect INFO lines (flow run begun, tasks finished) stay out of it."""
    home = tmp_path / "home"

    async def remember_and_flush(session: ClientSession) -> Any:
        await session.call_tool("remember", {"turns": _turns("mcp-user")})
        return _data(await session.call_tool("flush", {}))

    with (tmp_path / "stderr.log").open("w+") as err:
        flushed = anyio.run(_session, home, "mcp-user", remember_and_flush, err)
        err.seek(0)
        log = err.read()
    assert flushed["episodes_closed"] >= 1, flushed  # a flow run did happen
    assert " INFO " not in log, log
