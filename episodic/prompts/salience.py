"""The anchored 1-10 salience scale (Generative Agents, appendix A.1), as the
digest prompt (`prompts.digest`) asks it.

Both endpoints are named with concrete examples; without them LLM ratings
cluster at 6-8 and the importance term of retrieval goes flat. One rating per
episode, never per turn.
"""

from __future__ import annotations

from typing import Literal

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


def anchors(domain: str) -> tuple[str, str]:
    """The (1, 10) ends of a domain's scale."""
    if domain not in ANCHORS:
        raise ValueError(f"unknown salience domain {domain!r}; expected one of {sorted(ANCHORS)}")
    return ANCHORS[domain]
