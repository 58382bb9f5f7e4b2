"""Which transcript format a file holds, from its first 64 KiB (or its whole
first line, when that is longer: a line cut in two parses as nothing)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from episodic.errors import IngestError

HEAD_BYTES = 1 << 16
FIRST_LINE_CAP = 1 << 23  # beyond a maximal turn's line (`Options.max_line_bytes`)
_CLAUDE_TYPES = ("user", "assistant", "summary", "system", "file-history-snapshot")
_ANTHROPIC = re.compile(r'"type"\s*:\s*"(?:tool_use|tool_result|thinking|redacted_thinking)"')
_OPENAI = re.compile(
    r'"tool_calls"|"tool_call_id"|"function_call"|"role"\s*:\s*"(?:tool|system|developer|function)"'
)
_LOCOMO = re.compile(r'"(?:speaker_a|session_1_date_time)"')
_CHATGPT = re.compile(r'"mapping"\s*:\s*\{')


def _objects(lines: list[str]) -> list[dict[str, Any]]:
    found = []
    for line in lines[:50]:
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            found.append(obj)
    return found


def _chat(head: str) -> str:
    return "anthropic" if _ANTHROPIC.search(head) and not _OPENAI.search(head) else "openai"


def sniff(head: str) -> str | None:
    """The format of a file beginning with `head`, or None if none fits."""
    head = head.lstrip("\ufeff \t\r\n")
    if not head:
        return None
    lines = [ln for ln in head.splitlines() if ln.strip()]
    objs = [] if head.startswith("[") else _objects(lines)
    if not objs:  # one JSON document
        if _LOCOMO.search(head) and '"conversation"' in head:
            return "locomo"
        if _CHATGPT.search(head) and ('"current_node"' in head or '"children"' in head):
            return "chatgpt"
        if _ANTHROPIC.search(head) or re.search(r'"system"\s*:', head):
            return _chat(head)
        if '"role"' in head:
            return "openai"
        return None
    for obj in objs:
        if isinstance(obj.get("mapping"), dict):
            return "chatgpt"
        if "sessionId" in obj or (
            obj.get("type") in _CLAUDE_TYPES and ("uuid" in obj or "leafUuid" in obj)
        ):
            return "claude-code"
        if "conversation" in obj and "sample_id" in obj:
            return "locomo"
    for obj in objs:
        if "messages" in obj or ("role" in obj and "content" in obj):
            return _chat(head)
        if "role" in obj and "text" in obj:
            return "jsonl"
    return None


def detect_format(path: Path) -> str:
    """Sniff the format of `path`; IngestError when unreadable or unknown."""
    try:
        with Path(path).open("rb") as f:
            buf = bytearray(f.read(HEAD_BYTES))
            while b"\n" not in buf and len(buf) < FIRST_LINE_CAP:
                more = f.read(HEAD_BYTES)
                if not more:
                    break
                buf += more
            head = bytes(buf)
    except OSError as e:
        raise IngestError(str(path), f"cannot read: {e.strerror or e}") from e
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):  # what PowerShell's `>` writes
        raise IngestError(str(path), "the file is UTF-16; save it as UTF-8 and ingest again")
    fmt = sniff(head.decode("utf-8", "replace"))
    if fmt is None:
        reason = "empty file" if not head.strip() else "unknown transcript format"
        raise IngestError(
            str(path),
            f"{reason}; pass --format (jsonl, openai, anthropic, claude-code, locomo, chatgpt)",
        )
    return fmt
