"""Claude Code session transcripts: JSONL, one entry a line.

Entries of type user and assistant carry an Anthropic `message`; tool results
and errors arrive as `tool_result` blocks in user entries. Compaction
summaries (`type: summary`, `isCompactSummary`, or a user message that opens
with the continuation preamble) are derived text and never become turns: they
are counted as skipped. Harness notes (`isMeta`) and bookkeeping entries
(file snapshots, queue operations) are skipped too. The stream is the
entry's `sessionId` (the file name only where an entry has none), and a
sidechain (subagent) message goes to its own stream, `<session>/sidechain`
(`<session>/sidechain/<agentId>` where the entry names its agent); the
position is the entry's `uuid`, which survives a rewrite and a copy, and the
turn's id comes from it (from the line and content where an entry has none).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from episodic.ingest.anthropic_messages import blocks_to_parts
from episodic.ingest.common import Context
from episodic.ingest.container import each_line
from episodic.models import Rejected, TurnIn

CONTINUATION = "This session is being continued from a previous conversation"


def is_compaction(entry: dict[str, Any]) -> bool:
    if entry.get("type") == "summary" or entry.get("isCompactSummary") is True:
        return True
    message = entry.get("message")
    if entry.get("type") != "user" or not isinstance(message, dict):
        return False
    content = message.get("content")
    if isinstance(content, list):
        first = next((b for b in content if isinstance(b, dict) and b.get("type") == "text"), None)
        content = first.get("text") if first else None
    return isinstance(content, str) and content.lstrip().startswith(CONTINUATION)


def parse(ctx: Context) -> Iterator[TurnIn | Rejected]:
    return each_line(ctx, _entry)


def _entry(ctx: Context, line_no: int, raw: bytes, entry: Any) -> Iterator[TurnIn | Rejected]:
    """One line's entry: a turn, a reject, or counted as skipped."""
    if not isinstance(entry, dict):
        yield ctx.reject(line_no, raw, f"expected a JSON object, got {type(entry).__name__}")
    elif "type" not in entry:
        yield ctx.reject(line_no, raw, "missing field: type")
    elif is_compaction(entry):
        ctx.stats.skipped_derived += 1
    elif entry.get("isMeta") is True:
        ctx.stats.skipped_other += 1
    elif entry["type"] in ("user", "assistant"):
        yield from _message(ctx, line_no, raw, entry)
    elif (
        entry["type"] == "system"
        and isinstance(entry.get("content"), str)
        and entry["content"].strip()
    ):
        meta = {"subtype": entry["subtype"]} if isinstance(entry.get("subtype"), str) else {}
        position = _position(entry, line_no, None)
        yield ctx.turn(
            line_no=line_no,
            raw=raw,
            position=position,
            native_id=_native_id(entry, position),
            role="system",
            text=entry["content"],
            ts=entry.get("timestamp"),
            stream_id=entry.get("sessionId"),
            meta=meta,
        )
    else:
        ctx.stats.skipped_other += 1


def _has_uuid(entry: dict[str, Any]) -> bool:
    uuid = entry.get("uuid")
    return isinstance(uuid, str) and bool(uuid.strip())


def _position(entry: dict[str, Any], line_no: int, k: int | None) -> str:
    base = entry["uuid"] if _has_uuid(entry) else f"L{line_no}"
    return base if k is None else f"{base}.{k}"


def _native_id(entry: dict[str, Any], position: str) -> str | None:
    """The uuid (with the block's index) names the turn; a line number does not."""
    return position if _has_uuid(entry) else None


def _message(
    ctx: Context, line_no: int, raw: bytes, entry: dict[str, Any]
) -> Iterator[TurnIn | Rejected]:
    session = entry.get("sessionId")
    # refused lines are kept under the session's stream, as its turns would be
    stream = session if isinstance(session, str) and session.strip() else ""

    def held_back(why: str) -> Rejected:
        return ctx.reject(line_no, raw, why, stream_id=stream)

    message = entry.get("message")
    if message is None:
        yield held_back("missing field: message")
        return
    if not isinstance(message, dict):
        yield held_back(f"message must be an object, got {type(message).__name__}")
        return
    role = message.get("role", entry["type"])
    if not isinstance(role, str):
        yield held_back(f"role must be a string, got {type(role).__name__}")
        return
    parts = blocks_to_parts(role, message.get("content"))
    if parts.error:
        yield held_back(parts.error)
        return
    if not parts.parts:
        if parts.dropped:
            ctx.stats.skipped_other += 1  # thinking only
        else:
            yield held_back("message has no content")
        return
    base: dict[str, Any] = {}
    if isinstance(entry.get("uuid"), str):
        base["uuid"] = entry["uuid"]
    if entry.get("isSidechain") is True:
        base["sidechain"] = True
    single = len(parts.parts) == 1
    stream_id = entry.get("sessionId")
    if base.get("sidechain"):
        stream_id = sidechain_stream(ctx, entry)
    for k, part in enumerate(parts.parts):
        position = _position(entry, line_no, None if single else k)
        yield ctx.turn(
            line_no=line_no,
            raw=raw,
            position=position,
            native_id=_native_id(entry, position),
            role=part.role,
            text=part.text,
            ts=entry.get("timestamp"),
            stream_id=stream_id,
            tool_call=part.tool_call,
            is_error=part.is_error,
            meta={**base, **part.meta},
        )


def sidechain_stream(ctx: Context, entry: dict[str, Any]) -> str:
    """A subagent's own stream, beside its session's."""
    session = entry.get("sessionId")
    base = session if isinstance(session, str) and session.strip() else ctx.stem
    agent = entry.get("agentId")
    if isinstance(agent, str) and agent.strip():
        return f"{base}/sidechain/{agent}"
    return f"{base}/sidechain"
