"""Anthropic Messages: content blocks `text`, `tool_use`, `tool_result`, `thinking`.

Consecutive text blocks of a message make one turn; each `tool_use` is a
tool-call turn and each `tool_result` a tool turn, an error when `is_error`
says so (or, where the flag is absent, when the output plainly reports one).
Thinking is dropped: it is the model's scratchpad, not the conversation.
Claude Code transcripts carry the same blocks and reuse `blocks_to_parts`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from episodic.ingest import chat
from episodic.ingest.chat import Part, Parts, message_role
from episodic.ingest.common import Context
from episodic.models import Rejected, TurnIn

DROPPED_BLOCKS = ("thinking", "redacted_thinking")


def _result_text(content: Any) -> tuple[str | None, str | None]:
    if content is None:
        return "(no output)", None
    if isinstance(content, str):
        return content if content.strip() else "(no output)", None
    if not isinstance(content, list):
        return None, f"tool_result content must be a string or a list, got {type(content).__name__}"
    pieces: list[str] = []
    for block in content:
        if (
            isinstance(block, dict)
            and block.get("type", "text") == "text"
            and isinstance(block.get("text"), str)
        ):
            pieces.append(block["text"])
        elif isinstance(block, dict):
            pieces.append(f"[{str(block.get('type'))[:40]}]")
        elif isinstance(block, str):
            pieces.append(block)
    text = "\n\n".join(pieces)
    return text if text.strip() else "(no output)", None


def blocks_to_parts(role: str, content: Any) -> Parts:
    """Turn parts of one message's content (a string or a list of blocks)."""
    out = Parts()
    if content is None:
        return out
    if isinstance(content, str):
        out.parts.append(Part(role, content))
        return out
    if not isinstance(content, list):
        return Parts(
            error=f"content must be a string or a list of blocks, got {type(content).__name__}"
        )
    texts: list[str] = []

    def flush() -> None:
        if texts:
            out.parts.append(Part(role, "\n\n".join(texts)))
            texts.clear()

    for i, block in enumerate(content):
        if isinstance(block, str):
            texts.append(block)
            continue
        if not isinstance(block, dict):
            return Parts(error=f"content block {i} must be an object, got {type(block).__name__}")
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if not isinstance(text, str):
                return Parts(
                    error=f"content block {i}: text must be a string, got {type(text).__name__}"
                )
            texts.append(text)
        elif kind in DROPPED_BLOCKS:
            out.dropped += 1
        elif kind in ("tool_use", "server_tool_use"):
            flush()
            name = block.get("name") if isinstance(block.get("name"), str) else "tool"
            args = json.dumps(block.get("input", {}), ensure_ascii=False, sort_keys=True)
            meta: dict[str, Any] = {"tool_name": name}
            if isinstance(block.get("id"), str):
                meta["tool_use_id"] = block["id"]
            out.parts.append(Part("assistant", f"{name}({args})", tool_call=True, meta=meta))
        elif kind == "tool_result":
            flush()
            text, why = _result_text(block.get("content"))
            if why:
                return Parts(error=f"content block {i}: {why}")
            flag = block.get("is_error")
            is_error = flag if isinstance(flag, bool) else None
            meta = (
                {"tool_use_id": block["tool_use_id"]}
                if isinstance(block.get("tool_use_id"), str)
                else {}
            )
            out.parts.append(Part("tool", text, is_error=is_error, meta=meta))
        else:
            texts.append(
                f"[{str(kind)[:40]}]"
            )  # image, document: a placeholder keeps the turn honest
    flush()
    return out


def message_parts(msg: dict[str, Any]) -> Parts:
    role, why = message_role(msg)
    if why:
        return Parts(error=why)
    if "content" not in msg:
        return Parts(error="missing field: content")
    return blocks_to_parts(role, msg["content"])


def parse(ctx: Context) -> Iterator[TurnIn | Rejected]:
    return chat.parse(ctx, message_parts)
