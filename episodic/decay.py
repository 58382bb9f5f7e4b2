"""Retrieval-driven decay: MemoryBank's forgetting curve, computed correctly.

    R = exp(-dt / (tau * S)),   S = 1 + recall_count

dt is the wall-clock time since the item was last accessed. The strength S
grows with every recall, so a recalled memory fades more slowly. MemoryBank's
published code writes `exp(-t / 5*S)`, which Python reads as
`exp(-(t / 5) * S)`: there a recall makes a memory fade faster.

The stored `strength` of an item is the multiplier on its write-time salience:

    strength  = R * (1 + boost),   boost = min(max_boost, boost_per_recall * recall_count)
    effective = clip(salience * strength, 0, 10)

A fresh item (just accessed, never recalled) has strength 1.0, its effective
salience is its write-time salience, and effective salience is what retrieval
uses as importance. Items whose effective salience falls below a floor are
archived (a status), never deleted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from episodic.models import utc

MAX_SALIENCE = 10.0


def retention(dt_hours: float, recall_count: int, tau_hours: float) -> float:
    """R = exp(-dt / (tau * (1 + recall_count))), in (0, 1].

    1.0 at dt = 0; decreasing in dt; increasing in recall_count. A negative dt
    (an access stamped in the future) counts as zero.
    """
    if not (tau_hours > 0.0 and math.isfinite(tau_hours)):
        raise ValueError(f"tau_hours must be positive, got {tau_hours}")
    if recall_count < 0:
        raise ValueError(f"recall_count must be >= 0, got {recall_count}")
    if math.isnan(dt_hours):
        raise ValueError("dt_hours is NaN")
    strength = 1.0 + recall_count
    return math.exp(-max(0.0, dt_hours) / (tau_hours * strength))


def recall_boost(recall_count: int, boost_per_recall: float, max_boost: float) -> float:
    """Extra weight for frequent recall: linear in recalls, capped at max_boost."""
    if recall_count < 0:
        raise ValueError(f"recall_count must be >= 0, got {recall_count}")
    return min(max_boost, boost_per_recall * recall_count)


def effective_salience(
    salience: float,
    retention: float,
    recall_count: int,
    boost_per_recall: float = 0.1,
    max_boost: float = 0.5,
) -> float:
    """salience * R * (1 + boost), clipped to [0, 10]; the boost never exceeds max_boost."""
    if not (0.0 <= retention <= 1.0):
        raise ValueError(f"retention must be in [0, 1], got {retention}")
    if boost_per_recall < 0.0 or max_boost < 0.0:
        raise ValueError("boost_per_recall and max_boost must be >= 0")
    boost = recall_boost(recall_count, boost_per_recall, max_boost)
    value = salience * retention * (1.0 + boost)
    return min(MAX_SALIENCE, max(0.0, value))


def should_archive(effective: float, floor: float) -> bool:
    """Below the floor (strictly) an item is archived; at the floor it stays."""
    return effective < floor


@dataclass(frozen=True, slots=True)
class DecayPolicy:
    """Settings of the maintenance pass.

    tau_hours: time constant of the forgetting curve for a never-recalled item
    (one week by default: R = 1/e after a week without access).
    floor: effective salience below which an item is archived.
    boost_per_recall, max_boost: the bounded reward for frequent recall.
    min_delta: strength changes smaller than this are not reported as changes.
    """

    tau_hours: float = 168.0
    floor: float = 0.5
    boost_per_recall: float = 0.1
    max_boost: float = 0.5
    min_delta: float = 1e-3

    def __post_init__(self) -> None:
        if not (self.tau_hours > 0.0 and math.isfinite(self.tau_hours)):
            raise ValueError(f"tau_hours must be positive, got {self.tau_hours}")
        if not (0.0 <= self.floor <= MAX_SALIENCE):
            raise ValueError(f"floor must be in [0, 10], got {self.floor}")
        if not (0.0 <= self.boost_per_recall <= 10.0):
            raise ValueError(f"boost_per_recall must be in [0, 10], got {self.boost_per_recall}")
        if not (0.0 <= self.max_boost <= 10.0):
            raise ValueError(f"max_boost must be in [0, 10], got {self.max_boost}")
        if not (self.min_delta >= 0.0):
            raise ValueError(f"min_delta must be >= 0, got {self.min_delta}")

    def strength(self, dt_hours: float, recall_count: int) -> float:
        """R * (1 + boost): the multiplier on write-time salience."""
        r = retention(dt_hours, recall_count, self.tau_hours)
        return r * (1.0 + recall_boost(recall_count, self.boost_per_recall, self.max_boost))

    def effective(self, salience: float, dt_hours: float, recall_count: int) -> float:
        r = retention(dt_hours, recall_count, self.tau_hours)
        return effective_salience(salience, r, recall_count, self.boost_per_recall, self.max_boost)


@dataclass(frozen=True, slots=True)
class DecayItem:
    """An active item as the maintenance pass sees it.

    `last_access` is the last recall, or for a never-recalled item the time it
    was written in processing time (closed_at / created_at), not its event
    time: an old transcript imported today must not be archived at once.
    """

    item_id: str
    salience: float
    recall_count: int
    last_access: datetime
    strength: float = 1.0


@dataclass(frozen=True, slots=True)
class DecayChange:
    item_id: str
    old_strength: float
    new_strength: float
    effective: float
    archive: bool


def plan_decay(items: Sequence[DecayItem], now: datetime, policy: DecayPolicy) -> list[DecayChange]:
    """What the maintenance pass should write: new strengths and archivals.

    Pure: returns one change per item whose strength moved by more than
    `policy.min_delta` or which falls below the floor, in input order.
    """
    now = utc(now)
    changes: list[DecayChange] = []
    for item in items:
        dt = max(0.0, (now - utc(item.last_access)).total_seconds() / 3600.0)
        new_strength = policy.strength(dt, item.recall_count)
        effective = policy.effective(item.salience, dt, item.recall_count)
        archive = should_archive(effective, policy.floor)
        if archive or abs(new_strength - item.strength) > policy.min_delta:
            changes.append(
                DecayChange(
                    item_id=item.item_id,
                    old_strength=item.strength,
                    new_strength=new_strength,
                    effective=effective,
                    archive=archive,
                )
            )
    return changes
