"""The anchored 1-10 salience prompt (Generative Agents, appendix A.1).

Both endpoints are named with concrete examples; without them LLM ratings
cluster at 6-8 and the importance term of retrieval goes flat. One prompt per
episode, never per turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from episodic.llm.base import Message
from episodic.models import TurnLike
from episodic.prompts import clip_middle, one_line, system_and_user, today

Domain = Literal["general", "coding", "sre"]

# (1 = ..., 10 = ...) per domain; "general" is the paper's wording.
ANCHORS: dict[str, tuple[str, str]] = {
    "general": (
        "purely mundane (e.g., brushing teeth, making bed)",
        "extremely poignant (e.g., a break up, college acceptance)",
    ),
    "coding": (
        "a one-line clarifying question or a boilerplate getter method",
        "the core algorithm of the system or a critical production fix",
    ),
    "sre": (
        "a one-line clarifying question",
        "the root cause of a critical production incident",
    ),
}

CHARS_PER_TOKEN = 4  # rough and conservative for English text
DEFAULT_MAX_TOKENS = 2000
MAX_TURN_CHARS = 800

_LABELS = {
    "user-question": "user",
    "user-correction": "user (correction)",
    "assistant-answer": "assistant",
    "tool-call": "tool call",
    "tool-error": "tool error",
    "tool-success": "tool result",
    "system-event": "system",
}


def anchors(domain: str) -> tuple[str, str]:
    """The (1, 10) ends of a domain's scale."""
    if domain not in ANCHORS:
        raise ValueError(f"unknown salience domain {domain!r}; expected one of {sorted(ANCHORS)}")
    return ANCHORS[domain]


def render_turn(turn: TurnLike, max_chars: int = MAX_TURN_CHARS) -> str:
    label = _LABELS.get(turn.kind, turn.role)
    body = clip_middle(" ".join(turn.text.split()), max_chars)
    return f"{label}: {body}"


def render_episode(turns: Sequence[TurnLike], max_tokens: int = DEFAULT_MAX_TOKENS) -> str:
    """One line per turn; a long episode keeps its opening and its end.

    The budget is max_tokens * 4 characters. When the turns do not fit, the
    first turns fill half of it, the last turns the other half, and a marker
    says how many turns were left out in between.
    """
    budget = max_tokens * CHARS_PER_TOKEN
    lines = [render_turn(t, min(MAX_TURN_CHARS, max(40, budget // 2))) for t in turns]
    if sum(len(line) + 1 for line in lines) <= budget:
        return "\n".join(lines)
    half = budget // 2
    head: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > half:
            break
        head.append(line)
        used += len(line) + 1
    tail: list[str] = []
    used = 0
    for line in reversed(lines[len(head) :]):
        if used + len(line) + 1 > half:
            break
        tail.append(line)
        used += len(line) + 1
    tail.reverse()
    omitted = len(lines) - len(head) - len(tail)
    return "\n".join([*head, f"[... {omitted} turns omitted ...]", *tail])


def salience_messages(
    episode_text: str,
    *,
    domain: Domain = "general",
    now: datetime,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> list[Message]:
    """Messages asking for score (1-10), a short rationale and a one-line summary."""
    low, high = anchors(domain)
    text = clip_middle(episode_text.strip(), max(40, max_tokens * CHARS_PER_TOKEN))
    system = (
        "You rate how much one episode of an agent's work should weigh on its "
        "future recall. Be deterministic: the same episode always gets the same "
        "rating. Answer only with the requested fields."
    )
    user = (
        f"{today(now)}\n\n"
        f"On the scale of 1 to 10, where 1 is {low} and 10 is {high}, "
        "rate the likely poignancy of the following episode for future recall. "
        "Use the whole scale; most episodes are neither a 1 nor a 10.\n\n"
        f"Episode:\n{text}\n\n"
        "Return:\n"
        "- score: one integer from 1 to 10\n"
        "- rationale: why, in one or two sentences (at most 300 characters)\n"
        "- summary: what happened in the episode, one line of at most 160 characters"
    )
    return system_and_user(system, user)


def describe_anchors(domain: Domain) -> str:
    """The anchors of a domain as one line, for logs and the README."""
    low, high = ANCHORS[domain]
    return one_line(f"1 = {low}; 10 = {high}", 300)
