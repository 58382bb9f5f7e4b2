"""Plain views and results of fact distillation and merge.

These are the shapes the flow hands in (turns of a closed episode, candidate
facts from the store) and the shapes it gets back (new facts, decisions to
apply). They carry no storage handles: the lead applies a `Decision` to
LanceDB as supersession rows and a history row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from episodic.vocab import FactEvent, Role

Event = FactEvent  # declared in episodic.vocab
Vector = npt.NDArray[np.floating]


@dataclass(frozen=True)
class FactTurn:
    """The part of a raw turn that extraction needs."""

    turn_id: str
    role: Role
    text: str
    event_ts: datetime


@dataclass(frozen=True)
class NewFact:
    """A fact distilled from one closed episode, not yet merged.

    `valid_from` is the event time of its earliest supporting turn;
    `decided_by` is who extracted it: a model name, "offline" or
    "offline-fallback".
    """

    text: str
    support_turn_ids: tuple[str, ...]
    valid_from: datetime
    decided_by: str


@dataclass(frozen=True)
class ExistingFact:
    """An active fact of the same user, offered as a merge candidate."""

    fact_id: str
    text: str
    vector: Vector | None = None


@dataclass(frozen=True)
class CandidateSet:
    """One new fact and the top-k active facts the store found for it."""

    new: NewFact
    new_vector: Vector | None = None
    candidates: list[ExistingFact] = field(default_factory=list)


@dataclass(frozen=True)
class Decision:
    """What to do with one new fact; `decide()` returns one per candidate set,
    in the same order.

    - ADD: insert an active row with `new_text`.
    - UPDATE: supersede the target (its `valid_to` becomes
      `new_fact.valid_from`) and insert an active row with `new_text`
      linked to it.
    - DELETE: mark the target deleted; no new row.
    - NOOP: nothing changes; the history row points at the target.

    The target is either a stored fact (`target_fact_id`) or, when two new
    facts of the same episode meet, the row created by an earlier decision of
    the same list (`target_index`, an index into that list; apply decisions
    in order). At most one of the two is set; ADD has neither.
    """

    event: Event
    target_fact_id: str | None
    new_text: str | None
    old_text: str | None
    new_fact: NewFact
    decided_by: str
    target_index: int | None = None
    # why a rule changed or made this decision; empty when nothing to say
    note: str = ""
