"""A user turn held back for one update, so that its reply can vote on the cut before it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from episodic.segment.base import array_from_json, array_to_json, finite
from episodic.segment.episode import parse_ts
from episodic.segment.types import SegTurn


@dataclass
class Pending:
    """The candidate turn, its cleaned vector, and what was scored on its arrival."""

    turn: SegTurn
    x: np.ndarray | None  # unit float64, as the detector cleaned it
    scores: dict[str, float]  # every signal's score at arrival (semantic: this turn alone)
    distance: float  # semantic distance of the turn alone
    z: float  # surprisal z-score at arrival, for the episode's peak

    def state(self) -> dict[str, Any]:
        t = self.turn
        return {
            "seq": t.seq,
            "turn_id": t.turn_id,
            "role": t.role,
            "kind": t.kind,
            "text": t.text,
            "event_ts": t.event_ts.isoformat(),
            "x": None if self.x is None else array_to_json(self.x),
            "scores": dict(self.scores),
            "distance": self.distance,
            "z": self.z,
        }

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> Pending:
        x = None if s["x"] is None else array_from_json(s["x"])
        turn = SegTurn(
            seq=int(s["seq"]),
            turn_id=str(s["turn_id"]),
            role=str(s["role"]),
            kind=str(s["kind"]),
            text=str(s["text"]),
            event_ts=parse_ts(s["event_ts"]),
            vector=None,  # the cleaned vector is `x`
        )
        scores = {str(k): finite(v) for k, v in s["scores"].items()}
        return cls(turn, x, scores, finite(s["distance"]), finite(s["z"]))
