"""`episodic mcp` through the SDK's own stdio client: tools listed, remember
twice (idempotent), recall finds what was consolidated, facts and episodes
answer, and the user is the server's, not an argument's."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.integration.api_support import ROOT, cli_env, run_cli
from tests.integration.helpers import synthetic_stream

pytestmark = pytest.mark.slow


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


async def _session(home: Path, user: str, work: Any) -> Any:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from episodic.adapters.cli.main import main; main()", "mcp", "--user", user],
        env=cli_env(home),
        cwd=str(ROOT),
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)


def test_mcp_tools_over_stdio(tmp_path: Path) -> None:
    home = tmp_path / "home"
    turns = synthetic_stream(user="someone-else", stream="s1", gap_minutes=45)

    async def remember(session: ClientSession) -> tuple[set[str], Any, Any]:
        names = {t.name for t in (await session.list_tools()).tools}
        first = _data(await session.call_tool("remember", {"turns": turns}))
        second = _data(await session.call_tool("remember", {"turns": turns}))
        return names, first, second

    names, first, second = anyio.run(_session, home, "mcp-user", remember)
    assert {"remember", "recall", "facts", "episodes"} <= names
    assert (first["accepted"], second["duplicates"]) == (len(turns), len(turns))

    out = run_cli(home, "consolidate", "--user", "mcp-user", "--json")
    assert out.returncode == 0, out.stderr

    async def read(session: ClientSession) -> tuple[Any, Any, Any]:
        hits = _data(await session.call_tool("recall", {"query": "helm staging deploy", "k": 3}))
        eps = _data(await session.call_tool("episodes", {"recent": 5}))
        facts = _data(await session.call_tool("facts", {}))
        every = _data(await session.call_tool("episodes", {"recent": 1000}))
        return hits, eps, facts, every

    hits, eps, facts, every = anyio.run(_session, home, "mcp-user", read)
    assert hits["hits"] and any("helm" in h["text"] for h in hits["hits"])
    # the shipped search: a turn hit comes with its neighbours and its episode
    turn = next(h for h in hits["hits"] if h["kind"] == "turn")
    assert turn["turns"] and turn["episode_id"] in {e["episode_id"] for e in every["episodes"]}
    assert 1 <= len(eps["episodes"]) <= 5
    assert isinstance(facts["facts"], list)

    async def other(session: ClientSession) -> Any:
        return _data(await session.call_tool("recall", {"query": "helm staging deploy", "k": 3}))

    assert anyio.run(_session, home, "someone-else", other)["hits"] == []
