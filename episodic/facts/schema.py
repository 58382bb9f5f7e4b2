"""Response models of the two fact prompts: the contract with the model.

Both are validated with the instructor validation context the caller passes:
an answer that cites a turn or a fact that was not shown fails validation, so
instructor (or the fake provider) re-asks with the error. Each model also
knows its offline answer, which the offline provider and the fallback use.

Extraction context: {"turns": [FactTurn, ...], "n_turns": int}.
Merge context: {"n_new": int, "n_existing": int, "new": [...], "existing":
[...], "dup_threshold": float}, built by `merge.merge_context`.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from episodic.facts.offline_extract import MAX_FACT_CHARS, offline_extract
from episodic.facts.offline_merge import offline_merge
from episodic.vocab import FactEvent

MAX_FACTS = 50
MAX_MERGE_TEXT = 500


def _context_int(info: ValidationInfo, key: str) -> int | None:
    ctx = info.context
    if not isinstance(ctx, dict) or key not in ctx:
        return None
    return int(ctx[key])


class ExtractedFact(BaseModel):
    text: str = Field(
        min_length=3,
        max_length=MAX_FACT_CHARS + 100,
        description="One short, self-contained fact about the user or their team, "
        "understandable without the conversation (no 'he', 'it', 'that').",
    )
    support: list[int] = Field(
        min_length=1,
        max_length=MAX_FACTS,
        description="Numbers of the turns (as shown, starting at 1) that state this fact.",
    )

    @field_validator("support")
    @classmethod
    def _support_in_range(cls, v: list[int], info: ValidationInfo) -> list[int]:
        n = _context_int(info, "n_turns")
        if n is not None:
            bad = [i for i in v if not 1 <= i <= n]
            if bad:
                raise ValueError(f"support cites turns {bad}; only turns 1..{n} were shown")
        return v


class ExtractedFacts(BaseModel):
    """The durable facts one closed episode states, each citing its turns."""

    facts: list[ExtractedFact] = Field(default_factory=list, max_length=MAX_FACTS)

    @classmethod
    def offline_answer(cls, context: dict[str, Any]) -> ExtractedFacts:
        found = offline_extract(context.get("turns", []))
        return cls(facts=[ExtractedFact(text=t, support=s) for t, s in found[:MAX_FACTS]])


class MergeItem(BaseModel):
    event: FactEvent
    id: int | None = Field(
        default=None,
        description="Number of the existing fact affected (required for UPDATE, DELETE "
        "and NOOP; null for ADD).",
    )
    text: str = Field(
        default="",
        max_length=MAX_MERGE_TEXT,
        description="For UPDATE: the full updated fact. Otherwise may be empty.",
    )
    new_index: int = Field(ge=1, description="Number of the new fact this decision is about.")


class MergeDecisions(BaseModel):
    """Exactly one decision per new fact shown."""

    decisions: list[MergeItem] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ids_in_range(self, info: ValidationInfo) -> Self:
        n_new = _context_int(info, "n_new")
        n_existing = _context_int(info, "n_existing")
        seen: set[int] = set()
        problems: list[str] = []
        for item in self.decisions:
            if n_new is not None and not 1 <= item.new_index <= n_new:
                problems.append(f"new_index {item.new_index} is not one of 1..{n_new}")
            if item.new_index in seen:
                problems.append(f"new fact {item.new_index} has more than one decision")
            seen.add(item.new_index)
            if item.event != "ADD" and item.id is None:
                problems.append(
                    f"{item.event} for new fact {item.new_index} needs the id of an existing fact"
                )
            if item.id is not None and item.event != "ADD" and n_existing is not None:
                if not 1 <= item.id <= n_existing:
                    problems.append(f"id {item.id} is not an existing fact 1..{n_existing}")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @classmethod
    def offline_answer(cls, context: dict[str, Any]) -> MergeDecisions:
        return cls(decisions=[MergeItem(**item) for item in offline_merge(context)])
