"""The project's vocabulary, declared once. Every value here is stored or
shown as the string it spells, so a store written earlier reads the same.

Closed sets that only flow through typed fields are `Literal`s (mypy checks
every literal written against them; pydantic validates them at the edge);
the tuples beside them are their values, for membership checks and messages.
Values that code names and compares against are `StrEnum`s."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, get_args

# ---- turns --------------------------------------------------------------
Role = Literal["user", "assistant", "tool", "system"]
TurnKind = Literal[
    "user-question",
    "user-correction",
    "assistant-answer",
    "tool-call",
    "tool-error",
    "tool-success",
    "system-event",
    "other",
]
ROLES: tuple[Role, ...] = get_args(Role)
TURN_KINDS: tuple[TurnKind, ...] = get_args(TurnKind)

# ---- episodes -----------------------------------------------------------
BoundaryReason = Literal[
    "size_cap",
    "time_gap",
    "idle",
    "semantic_shift",
    "change_point",
    "surprisal",
    "structural",
    "agent_marker",
    "prediction_error",
    "flush",
]
BOUNDARY_REASONS: tuple[BoundaryReason, ...] = get_args(BoundaryReason)
EpisodeStatus = Literal["open", "closed", "archived"]
# what the prediction-error judge may answer about the turn after a segment
JudgeDecision = Literal["continue", "new", "sub-episode"]


class FactsState(StrEnum):
    """Where an episode stands in fact merging (the `facts_state` column)."""

    PENDING = ""
    PLANNED = "planned"  # decisions made and stored in `fact_plan`, not yet applied
    DONE = "done"


# ---- facts and reflections ------------------------------------------------
FactEvent = Literal["ADD", "UPDATE", "DELETE", "NOOP"]
FACT_EVENTS: tuple[FactEvent, ...] = get_args(FactEvent)
FactStatus = Literal["active", "superseded", "deleted"]
ReflectionStatus = Literal["active", "archived"]

# ---- run accounting -------------------------------------------------------


class Stage(StrEnum):
    """Where a consolidation's time goes (`stages` in `consolidate --json`).
    READ to WRITE are the segmentation poll's own steps; SALIENCE, FACTS and
    REFLECTION are whole steps; LLM is the time inside the model provider,
    a part of the steps that ask it (the offline provider included)."""

    READ = "read"
    EMBED = "embed"
    SEGMENT = "segment"
    WRITE = "write"
    SALIENCE = "salience"
    FACTS = "facts"
    REFLECTION = "reflection"
    LLM = "llm_wait"
