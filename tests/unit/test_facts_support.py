"""Shared bits of the fact tests: turns, a toy embedder, a tiny in-memory store."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

from episodic.facts import CandidateSet, Decision, ExistingFact, FactTurn, NewFact, normalize

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
NOW = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)


def turn(i: int, text: str, role: str = "user") -> FactTurn:
    return FactTurn(f"t{i}", role, text, T0 + timedelta(minutes=i))  # type: ignore[arg-type]


def vec(text: str, dim: int = 64) -> np.ndarray:
    """Bag of normalised words hashed into `dim` buckets; equal texts, equal vectors."""
    v = np.zeros(dim)
    for w in normalize(text).split():
        v[int(hashlib.md5(w.encode()).hexdigest(), 16) % dim] += 1.0
    return v


def new_fact(text: str, turn_id: str = "t1") -> NewFact:
    return NewFact(text, (turn_id,), T0, "offline")


@dataclass
class Store:
    """Applies decisions the way the lead's storage does, minus LanceDB."""

    rows: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (text, status)
    history: list[tuple[str, str]] = field(default_factory=list)  # (event, fact_id)

    def active(self) -> list[ExistingFact]:
        return [
            ExistingFact(fid, text, vec(text))
            for fid, (text, status) in self.rows.items()
            if status == "active"
        ]

    def sets(self, facts: list[NewFact]) -> list[CandidateSet]:
        return [CandidateSet(f, vec(f.text), self.active()) for f in facts]

    def apply(self, decisions: list[Decision]) -> None:
        created: dict[int, str] = {}
        for i, d in enumerate(decisions):
            target = d.target_fact_id
            if target is None and d.target_index is not None:
                target = created[d.target_index]
            if d.event in ("UPDATE", "DELETE"):
                assert target is not None
                text, _ = self.rows[target]
                self.rows[target] = (text, "superseded" if d.event == "UPDATE" else "deleted")
            if d.event in ("ADD", "UPDATE"):
                assert d.new_text
                fid = f"f{len(self.rows) + 1}"
                self.rows[fid] = (d.new_text, "active")
                created[i] = fid
                target = fid
            self.history.append((d.event, target or ""))

    def texts(self, status: str = "active") -> list[str]:
        return [t for t, s in self.rows.values() if s == status]
