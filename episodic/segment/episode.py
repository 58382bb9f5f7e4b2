"""The open episode's bookkeeping: members, running centroid, peak surprisal, summary."""

from __future__ import annotations

from collections import deque
from datetime import datetime
from typing import Any

import numpy as np

from episodic.segment.base import array_from_json, array_to_json, finite
from episodic.segment.types import ClosedSegment, SegTurn


def parse_ts(x: Any) -> datetime:
    ts = datetime.fromisoformat(str(x))
    if ts.tzinfo is None:
        raise ValueError(f"naive timestamp in state: {x!r}")
    return ts


def centroid(vsum: np.ndarray | None) -> list[float]:
    if vsum is None:
        return []
    norm = float(np.sqrt(vsum @ vsum))
    if not norm > 1e-12:
        return []
    out: list[float] = (vsum / norm).astype(np.float32).astype(np.float64).tolist()
    return out


class OpenEpisode:
    def __init__(self, recent: int, max_chars: int) -> None:
        self.recent = recent
        self.max_chars = max_chars
        self.seqs: list[int] = []
        self.turn_ids: list[str] = []
        self.started_at: datetime | None = None
        self.ended_at: datetime | None = None
        self.vsum: np.ndarray | None = None
        self.peak = 0.0
        self.is_sub = False
        self.summary: str | None = None
        self.texts: deque[str] = deque(maxlen=recent)

    def __len__(self) -> int:
        return len(self.seqs)

    def add(self, turn: SegTurn, x: np.ndarray | None, surprisal: float) -> None:
        # the span is the min to the max of the turns' times: a late turn
        # (dated before its predecessor) widens it instead of inverting it
        ts = turn.event_ts
        if self.started_at is None or ts < self.started_at:
            self.started_at = ts
        if self.ended_at is None or ts > self.ended_at:
            self.ended_at = ts
        self.seqs.append(turn.seq)
        self.turn_ids.append(turn.turn_id)
        if x is not None:
            if self.vsum is None:
                self.vsum = x.copy()
            else:
                self.vsum += x
        if surprisal > self.peak:
            self.peak = surprisal
        self.texts.append(turn.text[: self.max_chars])

    def close(
        self,
        reason: str,
        score: float,
        scores: dict[str, float],
        continues: bool,
    ) -> ClosedSegment:
        assert self.started_at is not None and self.ended_at is not None
        return ClosedSegment(
            seqs=tuple(self.seqs),
            turn_ids=tuple(self.turn_ids),
            started_at=self.started_at,
            ended_at=self.ended_at,
            reason=reason,
            score=score,
            signal_scores=dict(scores),
            centroid=centroid(self.vsum),
            peak_surprisal=self.peak,
            is_sub_episode=self.is_sub,
            continues_previous=continues,
            summary=self.summary,
        )

    def state(self) -> dict[str, Any]:
        return {
            "seqs": list(self.seqs),
            "turn_ids": list(self.turn_ids),
            "started_at": None if self.started_at is None else self.started_at.isoformat(),
            "ended_at": None if self.ended_at is None else self.ended_at.isoformat(),
            "vsum": None if self.vsum is None else array_to_json(self.vsum),
            "peak": self.peak,
            "is_sub": self.is_sub,
            "summary": self.summary,
            "texts": list(self.texts),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any], recent: int, max_chars: int) -> OpenEpisode:
        ep = cls(recent, max_chars)
        ep.seqs = [int(s) for s in state["seqs"]]
        ep.turn_ids = [str(t) for t in state["turn_ids"]]
        if len(ep.seqs) != len(ep.turn_ids):
            raise ValueError("seqs and turn_ids differ in length")
        if any(b <= a for a, b in zip(ep.seqs, ep.seqs[1:], strict=False)):
            raise ValueError("open seqs do not increase")
        st, en = state["started_at"], state["ended_at"]
        ep.started_at = None if st is None else parse_ts(st)
        ep.ended_at = None if en is None else parse_ts(en)
        if ep.seqs and (ep.started_at is None or ep.ended_at is None):
            raise ValueError("open episode without timestamps")
        v = state["vsum"]
        ep.vsum = None if v is None else array_from_json(v)
        ep.peak = finite(state["peak"])
        ep.is_sub = bool(state["is_sub"])
        s = state["summary"]
        ep.summary = None if s is None else str(s)
        ep.texts = deque((str(t) for t in state["texts"]), maxlen=recent)
        return ep
