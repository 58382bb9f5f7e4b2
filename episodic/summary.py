"""An offline episode summary a person can read: the request and its outcome.

    readable_summary(turns) -> "Asked: <the user's request> -> <the outcome>"

The request is the user's first turn of substance (three words or more,
greetings and prefaces dropped), cut to its first sentence or two. The
outcome is the assistant's last spoken turn (not a tool call), cut to its
first sentence; when the episode ended on a tool error and nothing was said
after it, the outcome says so. With no user turn the summary is what the
assistant said; with no spoken turn at all, empty (the caller then falls
back to the most central turn). At most `max_chars` characters, one line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from episodic.models import TurnLike
from episodic.prompts import one_line

SUMMARY_CHARS = 160
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_GREETING = re.compile(
    r"^(?:(?:hi|hello|hey|thanks|thank you|ok|okay|great|cool|sure|yes|no|so)\b[,.!]*\s*)+",
    re.I,
)
_PREFACE = re.compile(r"^[A-Za-z][\w' -]{0,30}:\s+(?=\S)")


def _lead(text: str, sentences: int, max_chars: int) -> str:
    body = _GREETING.sub("", " ".join(text.split())).strip()
    body = _PREFACE.sub("", body) or body
    parts = [p for p in _SENTENCE.split(body) if p.strip()]
    lead = " ".join(parts[:sentences]) if parts else body
    return one_line(lead, max_chars)


def readable_summary(turns: Sequence[TurnLike], max_chars: int = SUMMARY_CHARS) -> str:
    """What the episode was about, in one line; see the module docstring."""
    users = [t for t in turns if t.role == "user" and t.text.strip()]
    substantive = [t for t in users if len(_GREETING.sub("", t.text).split()) >= 3] or users
    said = [t for t in turns if t.role == "assistant" and t.kind != "tool-call" and t.text.strip()]
    last_error = max((i for i, t in enumerate(turns) if t.kind == "tool-error"), default=-1)
    last_said = max((i for i, t in enumerate(turns) if t in said), default=-1)
    if not substantive:
        return _lead(said[-1].text, 2, max_chars) if said else ""
    request = _lead(substantive[0].text, 2, max(40, max_chars * 3 // 5))
    outcome = ""
    if last_error > last_said:
        outcome = "ended on a tool error"
    elif said:
        outcome = _lead(said[-1].text, 1, max(30, max_chars - len(request) - 12))
    line = f"Asked: {request}" + (f" -> {outcome}" if outcome else "")
    return one_line(line, max_chars)
