"""The two fact prompts, as functions of their inputs and `now`.

Turns and stored facts are shown as small integers, never as ids: models copy
short numbers reliably, and the caller maps them back with a range check.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from episodic.facts.types import CandidateSet, ExistingFact, FactTurn, Vector
from episodic.llm.base import Message
from episodic.models import utc
from episodic.prompts import system_and_user

MAX_TURN_CHARS = 2000

_EXTRACT_SYSTEM = """\
You distil durable facts about a user (and their team) from one conversation \
episode, for a long-term memory.

Keep only facts likely to matter in later conversations: identity, where they \
live, work and role, people and pets, preferences, possessions, plans, \
decisions, tools, settings, and anything that has ended ("no longer", "sold", \
"died", "stopped").
Each fact is one short sentence that stands on its own: name the subject \
("User", "Team", or a name), no pronouns that need the conversation, no dates \
relative to an unknown today (write the date if it matters).
Take facts from what the user states. An assistant's or a tool's words count \
only when the user confirms them. Ignore questions, small talk and guesses.
For every fact, list the numbers of the turns that state it (support). \
Return an empty list when there is nothing durable."""

_MERGE_SYSTEM = """\
You maintain a user's long-term fact memory. New facts were just distilled; \
for each one, decide how it changes the memory, given the existing facts shown.

Events:
- ADD: the new fact is new information. id is null.
- UPDATE: the new fact changes or refines existing fact `id` (a new value for \
the same thing: new city, new employer, new tool). `text` is the full updated \
fact, keeping what is still true.
- DELETE: the new fact says existing fact `id` is no longer true and adds \
nothing else (e.g. "Rex died" for "User has a dog named Rex").
- NOOP: existing fact `id` already says the same. Nothing changes.

Rules: exactly one decision per new fact, with its `new_index`. Use only the \
numbers shown. When a new fact contradicts an existing one with a new value, \
choose UPDATE, not DELETE: the new information must be kept. Saying the same \
thing twice is a NOOP, never a DELETE."""


def _stamp(ts: datetime) -> str:
    return utc(ts).strftime("%Y-%m-%d %H:%M UTC")


def extraction_messages(turns: Sequence[FactTurn], *, now: datetime) -> list[Message]:
    """Messages asking for the facts of one closed episode; turns numbered from 1."""
    lines = []
    for i, turn in enumerate(turns, start=1):
        text = turn.text
        if len(text) > MAX_TURN_CHARS:
            text = text[:MAX_TURN_CHARS] + " ..."
        lines.append(f"[{i}] {turn.role} ({_stamp(turn.event_ts)}): {text}")
    user = (
        f"Today is {_stamp(now)}.\n\nConversation turns:\n"
        + "\n".join(lines)
        + "\n\nList the durable facts, each with the numbers of its supporting turns."
    )
    return system_and_user(_EXTRACT_SYSTEM, user)


def number_existing(
    candidate_sets: Sequence[CandidateSet],
) -> tuple[list[ExistingFact], list[list[int]]]:
    """Every candidate once, numbered 1..n in first-seen order, and each set's numbers."""
    numbered: dict[str, int] = {}
    existing: list[ExistingFact] = []
    per_set: list[list[int]] = []
    for cs in candidate_sets:
        ids: list[int] = []
        for fact in cs.candidates:
            if fact.fact_id not in numbered:
                existing.append(fact)
                numbered[fact.fact_id] = len(existing)
            if numbered[fact.fact_id] not in ids:
                ids.append(numbered[fact.fact_id])
        per_set.append(ids)
    return existing, per_set


def _vector(v: Vector | None) -> list[float] | None:
    return None if v is None else [float(x) for x in np.asarray(v).ravel()]


def merge_context(
    candidate_sets: Sequence[CandidateSet], *, dup_threshold: float
) -> dict[str, Any]:
    """The validation context of one merge call, in plain lists (so it fingerprints
    stably in the answer cache) and enough for the offline merge."""
    existing, per_set = number_existing(candidate_sets)
    return {
        "n_new": len(candidate_sets),
        "n_existing": len(existing),
        "dup_threshold": dup_threshold,
        "existing": [{"text": f.text, "vector": _vector(f.vector)} for f in existing],
        "new": [
            {"text": cs.new.text, "vector": _vector(cs.new_vector), "candidates": ids}
            for cs, ids in zip(candidate_sets, per_set, strict=True)
        ],
    }


def merge_messages(candidate_sets: Sequence[CandidateSet], *, now: datetime) -> list[Message]:
    """One merge call for an episode: new facts numbered 1..k, each with the numbers
    of its candidates; existing facts numbered 1..n."""
    existing, per_set = number_existing(candidate_sets)
    listed = "\n".join(f"[{i}] {f.text}" for i, f in enumerate(existing, start=1))
    new = "\n".join(
        f"new_index {i}: {cs.new.text}\n"
        f"    related existing facts: {', '.join(map(str, ids)) or 'none'}"
        for i, (cs, ids) in enumerate(zip(candidate_sets, per_set, strict=True), start=1)
    )
    user = (
        f"Today is {_stamp(now)}.\n\nExisting facts:\n{listed or '(none)'}\n\n"
        f"New facts:\n{new}\n\nGive one decision per new fact."
    )
    return system_and_user(_MERGE_SYSTEM, user)
