"""Prompt builders: functions that take `now` and context, never import-time strings.

This package also holds the small text helpers the builders share.
"""

from __future__ import annotations

import re
from datetime import datetime

from episodic.llm.base import Message
from episodic.models import utc

_SPACE = re.compile(r"\s+")


def today(now: datetime) -> str:
    """The date line that opens a prompt; the date only, so a day's prompts cache alike."""
    return f"Today is {utc(now):%Y-%m-%d}."


def system_and_user(system: str, user: str) -> list[Message]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def one_line(text: str, max_chars: int) -> str:
    """Whitespace collapsed to single spaces, cut at a word boundary to max_chars.

    A cut line ends with an ellipsis and stays within max_chars.
    """
    if max_chars < 2:
        raise ValueError(f"max_chars must be at least 2, got {max_chars}")
    line = _SPACE.sub(" ", text).strip()
    if len(line) <= max_chars:
        return line
    cut = line[: max_chars - 1]
    space = cut.rfind(" ")
    if space >= int(max_chars * 0.6):
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"


def clip_middle(text: str, max_chars: int) -> str:
    """Keep the head and tail of a long text, with a marker where the middle was."""
    if max_chars < 40:
        raise ValueError(f"max_chars must be at least 40, got {max_chars}")
    if len(text) <= max_chars:
        return text
    marker = " [... omitted ...] "
    keep = max_chars - len(marker)
    head = keep - keep // 3
    tail = keep - head
    return text[:head] + marker + (text[-tail:] if tail > 0 else "")
