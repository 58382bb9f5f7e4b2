"""`episodic mcp --user U`: an MCP server on stdio (the official `mcp` SDK).

Tools: `remember` (turns in the generic JSONL shape), `recall` (query, k,
trace), `facts` (as_of), `episodes` (recent), `flush`, and the user's
corrections `reword_fact`, `invalidate_fact` and `restore_fact` (kept in the
fact's history as `user-correction:mcp`; erasing is for a person, not an
agent). One server process serves one user: the user is fixed at start,
never taken from a tool's arguments. Each tool is one call of the memory
service and answers its views as JSON, the same the CLI's `--json` and the
HTTP API give; `recall` answers each hit's brief form (`Hit.brief`: an agent
pays for its context by the token) unless asked for the trace. A refused
call answers an error whose text says why. stdout carries the protocol only.
"""

from __future__ import annotations

import gc
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from episodic.adapters.autopilot import Autopilot
from episodic.errors import BusyError, NotFoundError
from episodic.service.memory import Memory

MAX_TURNS = 1_000
MAX_K = 100
MAX_RECENT = 1_000
ACTOR = "mcp"  # a correction's history names the face it came through


@contextmanager
def _refusals() -> Iterator[None]:
    """A refusal (bad argument, unknown id) reaches the client with its reason:
    the SDK shows the text of a ToolError only, any other exception as
    `Error executing tool <name>`."""
    try:
        yield
    except (ValueError, NotFoundError, BusyError) as e:
        raise ToolError(str(e)) from e


def build_server(user_id: str, memory: Memory, *, autopilot: Autopilot | None = None) -> MCPServer:
    """The tools over `memory`, for `user_id` only; the caller owns the memory.
    With an `autopilot`, `remember` schedules the user's consolidation."""
    server: MCPServer = MCPServer(
        "episodic",
        instructions=(
            "Long-term memory. `remember` stores conversation turns; `recall` searches "
            "episodes, facts and reflections; `facts` lists what is believed true; "
            "`episodes` lists recent episodes; `flush` consolidates now (\"I'm done, "
            'remember this"); when the user says a fact is wrong, `reword_fact` fixes '
            "its wording and `invalidate_fact` stops believing it (`restore_fact` undoes)."
        ),
        log_level="WARNING",
    )

    @server.tool()
    def remember(turns: list[dict[str, Any] | Any]) -> dict[str, Any]:
        """Store turns: each {role, text, ts?, stream_id?, kind?, meta?, id?}.
        Idempotent: the same turn (same id, or same content and ts) is stored once.
        A bad item is quarantined and listed in `rejected`; the others are stored."""
        with _refusals():
            if len(turns) > MAX_TURNS:
                raise ValueError(f"at most {MAX_TURNS} turns per call, got {len(turns)}")
            receipt = memory.add(user_id, turns, source="mcp")
            if autopilot is not None and receipt.accepted:
                autopilot.touch(user_id)
            return receipt.as_json()

    @server.tool()
    def flush() -> dict[str, Any]:
        """ "I'm done, remember this now": consolidate this user's turns at once,
        closing the open episode; what the run did (episodes, facts, calls)."""
        with _refusals():
            out = autopilot.flush(user_id) if autopilot else memory.consolidate(user_id, flush=True)
            summary: dict[str, Any] = json.loads(json.dumps(out, default=str))
            return summary

    @server.tool()
    def recall(query: str, k: int = 5, trace: bool = False) -> dict[str, Any]:
        """Search memory (turns with their neighbours, facts, reflections), as
        `episodic search` does: each hit's text, when, score, context turns and
        episode; `trace` adds every part of the score, as `episodic search --json`."""
        with _refusals():
            if not query.strip():
                raise ValueError("query is empty")
            if not 1 <= k <= MAX_K:
                raise ValueError(f"k must be between 1 and {MAX_K}, got {k}")
            hits = memory.search(user_id, query, k=k)
            return {"hits": [h.as_json() if trace else h.brief().as_json() for h in hits]}

    @server.tool()
    def facts(as_of: str | None = None) -> dict[str, Any]:
        """Active facts, or those believed true at `as_of` (ISO 8601)."""
        with _refusals():
            when = datetime.fromisoformat(as_of) if as_of else None
            return {"facts": [f.as_json() for f in memory.facts(user_id, as_of=when)]}

    @server.tool()
    def episodes(recent: int = 10) -> dict[str, Any]:
        """The most recent episodes, newest first: summary, span and why each was cut."""
        with _refusals():
            if not 1 <= recent <= MAX_RECENT:
                raise ValueError(f"recent must be between 1 and {MAX_RECENT}, got {recent}")
            eps = memory.episodes(user_id, limit=recent)[::-1]
            return {"episodes": [e.as_json() for e in eps]}

    @server.tool()
    def reword_fact(fact_id: str, text: str) -> dict[str, Any]:
        """The user says a fact is worded wrong: a new fact with `text` supersedes
        it for the same time and episodes; the old wording stays in its history."""
        with _refusals():
            return memory.reword_fact(user_id, fact_id, text, actor=ACTOR).as_json()

    @server.tool()
    def invalidate_fact(fact_id: str) -> dict[str, Any]:
        """The user says a fact is not true: no longer believed, kept in its history."""
        with _refusals():
            return memory.invalidate_fact(user_id, fact_id, actor=ACTOR).as_json()

    @server.tool()
    def restore_fact(fact_id: str) -> dict[str, Any]:
        """Undo `invalidate_fact`: the fact is believed again."""
        with _refusals():
            return memory.restore_fact(user_id, fact_id, actor=ACTOR).as_json()

    return server


def serve_mcp(user_id: str) -> None:
    """The process entry point: one Memory from the environment (consolidating
    through the flow in this process), serving `user_id` on stdio until the
    client goes, with an autopilot that consolidates after writes; then closed
    (its recall bookkeeping written)."""
    from episodic.adapters.embedded import Memory as Embedded

    with Embedded(journal=True) as memory:
        pilot = Autopilot.configured(memory)
        if pilot is not None:
            pilot.start()
        server = build_server(user_id, memory, autopilot=pilot)
        # the SDK's root handler has no level of its own: Prefect's INFO
        # records, which reach root, would fill the client's log of this server
        for handler in logging.getLogger().handlers:
            handler.setLevel(logging.WARNING)
        gc.freeze()  # as the HTTP API does: no full collection walks the libraries
        try:
            server.run("stdio")
        finally:
            if pilot is not None:
                pilot.stop()
