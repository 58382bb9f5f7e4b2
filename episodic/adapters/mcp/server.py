"""`episodic mcp --user U`: an MCP server on stdio (the official `mcp` SDK).

Tools: `remember` (turns in the generic JSONL shape), `recall` (query, k),
`facts` (as_of) and `episodes` (recent). One server process serves one user:
the user is fixed at start, never taken from a tool's arguments. stdout
carries the protocol only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mcp.server.mcpserver import MCPServer

from episodic.service.accept import GroupWriter, accept
from episodic.service.runtime import Runtime, get_runtime

MAX_TURNS = 1_000


def build_server(user_id: str, rt: Runtime | None = None) -> MCPServer:
    rt = rt or get_runtime()
    writer = GroupWriter(rt.raw)
    server: MCPServer = MCPServer(
        "episodic",
        instructions=(
            "Long-term memory. `remember` stores conversation turns; `recall` searches "
            "episodes, facts and reflections; `facts` lists what is believed true; "
            "`episodes` lists recent episodes."
        ),
        log_level="WARNING",
    )

    @server.tool()
    def remember(turns: list[dict[str, Any]]) -> dict[str, Any]:
        """Store turns: each {role, text, ts?, stream_id?, kind?, meta?, id?}.
        Idempotent: the same turn (same id, or same content and ts) is stored once."""
        if len(turns) > MAX_TURNS:
            raise ValueError(f"at most {MAX_TURNS} turns per call, got {len(turns)}")
        out = accept(
            writer,
            turns,
            user_id=user_id,
            source="mcp",
            max_turn_chars=rt.settings.max_turn_chars,
        )
        return out.as_dict()

    @server.tool()
    def recall(query: str, k: int = 5) -> dict[str, Any]:
        """Search memory (turns with their neighbours, facts, reflections), as
        `episodic search` does; each hit with its score, turns and episode."""
        from episodic.service.search import MemoryOptions, search_memory

        if not query.strip():
            raise ValueError("query is empty")
        if not 1 <= k <= 100:
            raise ValueError(f"k must be between 1 and 100, got {k}")
        hits = search_memory(rt, user_id, query, MemoryOptions(k=k))
        return {
            "hits": [
                {
                    "kind": h.kind,
                    "text": h.text,
                    "score": h.score,
                    "episode_id": h.episode_id,
                    "turns": [
                        {"speaker": t["speaker"], "text": t["text"], "event_ts": t["event_ts"]}
                        for t in h.turns
                    ],
                }
                for h in hits
            ]
        }

    @server.tool()
    def facts(as_of: str | None = None) -> dict[str, Any]:
        """Active facts, or those believed true at `as_of` (ISO 8601)."""
        from episodic.models import utc

        if as_of:
            rows = rt.facts.as_of(user_id, utc(datetime.fromisoformat(as_of)))
        else:
            rows = rt.facts.list(user_id)
        return {
            "facts": [
                {"fact_id": f.fact_id, "text": f.text, "valid_from": f.valid_from.isoformat()}
                for f in rows
            ]
        }

    @server.tool()
    def episodes(recent: int = 10) -> dict[str, Any]:
        """The most recent closed episodes: summary, span and why each was cut."""
        if not 1 <= recent <= 1000:
            raise ValueError(f"recent must be between 1 and 1000, got {recent}")
        eps = sorted(rt.episodes.list(user_id), key=lambda e: e.ended_at)[-recent:][::-1]
        return {
            "episodes": [
                {
                    "episode_id": e.episode_id,
                    "stream_id": e.stream_id,
                    "started_at": e.started_at.isoformat(),
                    "ended_at": e.ended_at.isoformat(),
                    "n_turns": e.n_turns,
                    "reason": e.boundary_reason,
                    "summary": e.summary or e.text[:500],
                }
                for e in eps
            ]
        }

    return server


def serve_mcp(user_id: str) -> None:
    build_server(user_id).run("stdio")
