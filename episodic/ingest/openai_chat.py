"""OpenAI chat messages: system / developer / user / assistant (with tool_calls) / tool.

An assistant message yields its text as an answer and then one tool-call turn
per call, so each call can be joined to its result by `tool_call_id`. A tool
message is a tool-success unless its content plainly reports an error.
Content is a string or a list of parts; non-text parts leave a placeholder.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from episodic.ingest import chat
from episodic.ingest.chat import Part, Parts, message_role
from episodic.ingest.common import Context
from episodic.models import Rejected, TurnIn

_TEXT_PARTS = ("text", "input_text", "output_text")


def content_text(content: Any) -> tuple[Any, str | None]:
    """The text of a content value (string, list of parts or None), or a reason."""
    if content is None or isinstance(content, str):
        return content, None
    if not isinstance(content, list):
        return None, f"content must be a string or a list of parts, got {type(content).__name__}"
    pieces: list[str] = []
    for i, part in enumerate(content):
        if isinstance(part, str):
            pieces.append(part)
            continue
        if not isinstance(part, dict):
            return None, f"content part {i} must be an object, got {type(part).__name__}"
        kind = part.get("type", "text")
        if kind in _TEXT_PARTS or kind == "refusal":
            text = part.get("text", part.get("refusal"))
            if not isinstance(text, str):
                return None, f"content part {i}: text must be a string, got {type(text).__name__}"
            pieces.append(text)
        else:
            pieces.append(f"[{str(kind)[:40]}]")
    return "\n\n".join(pieces), None


def _call_text(call: dict[str, Any]) -> tuple[str, str]:
    fn = call.get("function")
    if isinstance(fn, dict):
        name = fn.get("name")
        args = fn.get("arguments")
    else:
        name, args = call.get("name"), call.get("arguments")
    name = name if isinstance(name, str) and name else "tool"
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False) if args is not None else ""
    return name, f"{name}({args})"


def message_parts(msg: dict[str, Any]) -> Parts:
    role, why = message_role(msg)
    if why:
        return Parts(error=why)
    text, why = content_text(msg.get("content"))
    if why:
        return Parts(error=why)
    if text is None and isinstance(msg.get("refusal"), str):
        text = msg["refusal"]
    out = Parts()
    if role in ("tool", "function"):
        meta = {k: msg[k] for k in ("tool_call_id", "name") if isinstance(msg.get(k), str)}
        out.parts.append(Part("tool", text if text else "(no output)", meta=meta))
        return out
    if text is not None and (text.strip() or not msg.get("tool_calls")):
        meta = {"name": msg["name"]} if isinstance(msg.get("name"), str) else {}
        out.parts.append(Part(role, text, meta=meta))
    calls = msg.get("tool_calls")
    if calls is None and isinstance(msg.get("function_call"), dict):
        calls = [{"function": msg["function_call"]}]  # the pre-tools API
    if calls is not None:
        if not isinstance(calls, list):
            return Parts(error=f"tool_calls must be a list, got {type(calls).__name__}")
        for i, call in enumerate(calls):
            if not isinstance(call, dict):
                return Parts(error=f"tool_calls[{i}] must be an object, got {type(call).__name__}")
            name, call_text = _call_text(call)
            meta = {"tool_name": name}
            if isinstance(call.get("id"), str):
                meta["tool_call_id"] = call["id"]
            out.parts.append(Part("assistant", call_text, tool_call=True, meta=meta))
    if not out.parts and text is None:
        if "text" in msg:  # a turn of the generic format, in a JSON list
            return Parts(
                error="missing field: content (turns with `text` are generic JSONL: "
                "one JSON object a line)"
            )
        return Parts(error="missing field: content")
    return out


def parse(ctx: Context) -> Iterator[TurnIn | Rejected]:
    return chat.parse(ctx, message_parts)
