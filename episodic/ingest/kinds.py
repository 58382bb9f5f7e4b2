"""Turn kinds derived from structure, the same way for every source format.

The raw log has no finer speech act for users than question and correction:
any user request counts as a user-question, unless it contradicts the agent
("no, ...", "actually ...", "that's wrong", "I meant"). A "no" that answers
the agent's own question is not a correction. Tool output is an error when
the source says so, or, where the source is silent, when the text plainly
reports one.
"""

from __future__ import annotations

import re

from episodic.models import TurnKind

_CORRECTION_START = re.compile(
    r"""^\W*(?:
        (?:no|nope|nah)\b(?!\s+(?:problem|worries|need|thanks|rush|hurry|idea|doubt)\b)
      | actually\b
      | wrong\b
      | incorrect\b
      | not\s+quite\b
      | not\s+what\s+i\b
      | that'?s\s+(?:wrong|incorrect|not\s+(?:right|correct|it|what))
      | that\s+is\s+(?:wrong|incorrect|not\s+(?:right|correct|it|what))
      | i\s+(?:meant|mean|said)\b
      | you\s+(?:misunderstood|got\s+it\s+wrong)
      | wait,?\s+(?:no|that)\b
    )""",
    re.IGNORECASE | re.VERBOSE,
)
_CORRECTION_ANYWHERE = re.compile(
    r"\b(?:that'?s\s+(?:wrong|incorrect|not\s+what\s+i)|that\s+is\s+wrong|i\s+meant\b|not\s+what\s+i\s+(?:asked|meant|wanted))",
    re.IGNORECASE,
)
_ERROR_START = re.compile(
    r"^\W*(?:error|fatal|failed|failure|exception|traceback|panic|denied|permission denied)\b",
    re.IGNORECASE,
)
_ERROR_ANYWHERE = re.compile(
    r"Traceback \(most recent call last\)"
    r"|\bexit(?:ed with)? (?:code|status)[:= ]+[1-9]"
    r"|\bcommand not found\b"
    r"|\bNo such file or directory\b"
    r"|^\s*\{\s*\"error\"\s*:",
    re.IGNORECASE,
)
_INTERRUPT = re.compile(r"^\[Request interrupted by user", re.IGNORECASE)


def is_correction(text: str, *, after_question: bool = False) -> bool:
    """Does the user contradict the agent? After a question, "no" is only an answer."""
    head = text.lstrip()[:300]
    if _CORRECTION_ANYWHERE.search(head):
        return True
    return not after_question and bool(_CORRECTION_START.match(head))


def looks_like_error(text: str) -> bool:
    head = text[:4000]
    return bool(_ERROR_START.match(head) or _ERROR_ANYWHERE.search(head))


def derive_kind(
    role: str,
    text: str,
    *,
    tool_call: bool = False,
    is_error: bool | None = None,
    after_question: bool = False,
) -> TurnKind:
    """The kind of a turn from its role, its structure and, for users, its opening."""
    if role == "system":
        return "system-event"
    if role == "tool":
        if is_error is None:
            is_error = looks_like_error(text)
        return "tool-error" if is_error else "tool-success"
    if role == "assistant":
        return "tool-call" if tool_call else "assistant-answer"
    if role == "user":
        if _INTERRUPT.match(text.lstrip()):
            return "other"
        return (
            "user-correction"
            if is_correction(text, after_question=after_question)
            else "user-question"
        )
    return "other"
