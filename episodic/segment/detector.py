"""The online boundary detector: every signal on every turn, one decision, checkpointable.

Hard signals (time gap, agent marker, structural, size cap) cut on their own.
Soft signals (semantic shift, change point, surprisal) are each scaled so that
0.5 means "this signal alone would cut", then averaged with weights into one
evidence in [0, 1]. At or above `cut_threshold` the detector cuts; in the band
[`doubt_threshold`, `cut_threshold`) it asks the judge when one is injected
and otherwise splits: when in doubt, split, because a continuity merge can
join two pieces later but nothing can split a blurred episode after the fact.
Soft cuts land only on anchor turns (user turns when `user_anchored`), never on
a user correction, and never before the episode holds `min_turns` turns.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Any

import numpy as np

from episodic.errors import LLMError, SegmenterStateError
from episodic.segment.base import array_from_json, finite
from episodic.segment.bocpd import ChangePoint, Surprisal
from episodic.segment.episode import OpenEpisode, centroid, parse_ts
from episodic.segment.semantic import SemanticShift
from episodic.segment.signals import AgentMarker, IdleClose, SizeCap, Structural, TimeGap
from episodic.segment.types import SIGNALS, ClosedSegment, Judge, JudgeAnswer, JudgeRequest, SegTurn

STATE_FORMAT = "episodic.segment.detector"
STATE_VERSION = 1
SOFT = ("semantic_shift", "change_point", "surprisal")


@dataclass(frozen=True)
class DetectorConfig:
    """Every threshold of the detector. Defaults calibrated on DialSeg711 and TIAGE
    with all-MiniLM-L6-v2 (see docs/segmentation.md)."""

    # hard signals
    max_turns: int = 20  # size cap, turns
    max_minutes: float = 240.0  # size cap, span of the episode
    time_gap_minutes: float = 30.0
    idle_minutes: float = 30.0
    # soft signals, each one's own firing point
    semantic_threshold: float = 0.8  # cosine distance to the decayed mean
    semantic_decay: float = 0.7  # weight of the newest turn in that mean
    cp_threshold: float = 0.5  # BOCPD P(new run)
    surprisal_threshold: float = 1.5  # z-score of the predictive surprisal
    surprisal_rate: float = 0.05
    # BOCPD model
    bocpd_dims: int = 16  # fixed +-1 projection of the embedding
    max_run_length: int = 50
    hazard_lambda: float = 6.0  # expected run length, turns
    obs_var: float = 0.6
    prior_var: float = 1.0
    seed: int = 0
    # combination: on DialSeg711 and TIAGE any weight on change point or surprisal
    # made Pk worse (docs/segmentation.md), so by default they are recorded, not voted
    w_semantic: float = 1.0
    w_change_point: float = 0.0
    w_surprisal: float = 0.0
    cut_threshold: float = 0.6
    doubt_threshold: float = 0.5  # [doubt, cut): ask the judge, or split without one
    user_anchored: bool = True
    min_turns: int = 2  # soft cuts only once the episode holds this many turns
    # continuity after a size-cap cut
    continuity_max_gap_minutes: float = 60.0
    continuity_min_similarity: float = 0.5
    # judge context
    judge_recent_turns: int = 6
    judge_max_chars: int = 2000

    def __post_init__(self) -> None:
        pos = ("max_minutes", "time_gap_minutes", "idle_minutes", "obs_var", "prior_var")
        for name in pos:
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0")
        unit = ("semantic_threshold", "cp_threshold", "semantic_decay")
        for name in unit:
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in (0, 1]")
        if not 0.0 < self.surprisal_rate < 1.0:
            raise ValueError("surprisal_rate must be in (0, 1)")
        if not self.surprisal_threshold > 0:
            raise ValueError("surprisal_threshold must be > 0")
        if self.max_turns < 1 or self.min_turns < 1 or self.bocpd_dims < 1:
            raise ValueError("max_turns, min_turns and bocpd_dims must be >= 1")
        if self.max_run_length < 2:
            raise ValueError("max_run_length must be >= 2")
        if not self.hazard_lambda > 1.0:
            raise ValueError("hazard_lambda must be > 1")
        weights = (self.w_semantic, self.w_change_point, self.w_surprisal)
        if min(weights) < 0 or not sum(weights) > 0 or not all(map(math.isfinite, weights)):
            raise ValueError("soft weights must be >= 0, finite, and not all zero")
        if not 0.0 < self.doubt_threshold <= self.cut_threshold <= 1.0:
            raise ValueError("need 0 < doubt_threshold <= cut_threshold <= 1")
        if self.continuity_max_gap_minutes < 0 or not -1.0 <= self.continuity_min_similarity <= 1.0:
            raise ValueError("continuity settings out of range")
        if self.judge_recent_turns < 1 or self.judge_max_chars < 1:
            raise ValueError("judge context sizes must be >= 1")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DetectorConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown config keys: {sorted(unknown)}")
        return cls(**data)


def clean_vector(v: np.ndarray | None) -> np.ndarray | None:
    """A unit float64 copy, or None for a missing, empty, zero or non-finite vector."""
    if v is None:
        return None
    a = np.asarray(v, dtype=np.float64).ravel()
    if a.size == 0 or not np.isfinite(a).all():
        return None
    top = float(np.abs(a).max())
    if not top > 0.0:
        return None
    a = a / top  # guards the dot product against overflow
    out: np.ndarray = a / math.sqrt(float(a @ a))
    return out


class Detector:
    """Cuts one stream of turns into episodes, online, one turn at a time."""

    def __init__(self, config: DetectorConfig | None = None, judge: Judge | None = None) -> None:
        self.config = c = config or DetectorConfig()
        self.judge = judge
        self._size = SizeCap(c.max_turns, c.max_minutes)
        self._gap = TimeGap(c.time_gap_minutes)
        self._idle = IdleClose(c.idle_minutes)
        self._structural = Structural()
        self._marker = AgentMarker()
        self._semantic = SemanticShift(c.semantic_threshold, c.semantic_decay)
        self._cp = ChangePoint(
            c.cp_threshold,
            c.bocpd_dims,
            c.max_run_length,
            c.hazard_lambda,
            c.obs_var,
            c.prior_var,
            c.seed,
        )
        self._surprisal = Surprisal(c.surprisal_threshold, c.surprisal_rate)
        self._weights = (c.w_semantic, c.w_change_point, c.w_surprisal)
        self._wsum = sum(self._weights)
        self._open = OpenEpisode(c.judge_recent_turns, c.judge_max_chars)
        self._last_seq: int | None = None
        self._last_scores: dict[str, float] = dict.fromkeys(SIGNALS, 0.0)
        # the last closed segment, for the continuity check
        self._prev_reason = ""
        self._prev_ended: datetime | None = None
        self._prev_centroid: np.ndarray | None = None

    # -- public surface -------------------------------------------------
    @property
    def open_turn_ids(self) -> tuple[str, ...]:
        return tuple(self._open.turn_ids)

    @property
    def open_seqs(self) -> tuple[int, ...]:
        return tuple(self._open.seqs)

    @property
    def last_scores(self) -> dict[str, float]:
        return dict(self._last_scores)

    def update(self, turn: SegTurn) -> list[ClosedSegment]:
        """Score `turn`; return the episode it closes, if any (the turn opens the next)."""
        if self._last_seq is not None and turn.seq <= self._last_seq:
            return []  # a replayed turn: already absorbed
        self._last_seq = turn.seq
        x = clean_vector(turn.vector)
        c = self.config
        self._size.update(turn)
        self._gap.update(turn)
        self._idle.update(turn)
        self._structural.update(turn)
        self._marker.update(turn)
        sem = self._semantic.update(x)
        cp = self._cp.update(x)
        self._surprisal.update(self._cp.log_evidence)
        sur = self._surprisal.score
        ev = (
            self._weights[0] * min(1.0, 0.5 * sem / c.semantic_threshold)
            + self._weights[1] * min(1.0, 0.5 * cp / c.cp_threshold)
            + self._weights[2] * sur
        ) / self._wsum
        scores = {
            "size_cap": self._size.score,
            "time_gap": self._gap.score,
            "idle": 0.0,
            "structural": self._structural.score,
            "agent_marker": self._marker.score,
            "semantic_shift": sem,
            "change_point": cp,
            "surprisal": sur,
            "prediction_error": 0.0,
            "combined": ev,
        }
        reason, score, sub, summary = self._decide(turn, ev, (sem, cp, sur), scores)
        self._last_scores = scores
        closed: list[ClosedSegment] = []
        if reason and len(self._open):
            closed.append(self._close(reason, score, scores))
        if not len(self._open):
            self._size.restart(turn)
            self._semantic.restart(x)
            self._open.is_sub = sub
            self._open.summary = summary
        elif summary is not None:
            self._open.summary = summary
        self._open.add(turn, x, self._surprisal.z)
        return closed

    def close_idle(self, now: datetime) -> list[ClosedSegment]:
        """Close the open episode when its last turn is older than `idle_minutes`."""
        if not len(self._open):
            return []
        score = self._idle.check(now.timestamp())
        if not self._idle.boundary_detected:
            return []
        scores = dict.fromkeys(SIGNALS, 0.0) | {"idle": score, "combined": 0.0}
        return [self._close("idle", score, scores)]

    def flush(self) -> list[ClosedSegment]:
        """Close whatever is open (end of stream)."""
        if not len(self._open):
            return []
        scores = dict.fromkeys(SIGNALS, 0.0) | {"combined": 0.0}
        return [self._close("flush", 0.0, scores)]

    # -- decision -------------------------------------------------------
    def _decide(
        self, turn: SegTurn, ev: float, soft: tuple[float, float, float], scores: dict[str, float]
    ) -> tuple[str, float, bool, str | None]:
        """(reason or "", score, opens a sub-episode, summary for the new episode)."""
        if not len(self._open):
            return "", 0.0, False, None
        if self._gap.boundary_detected:
            return "time_gap", 1.0, False, None
        if self._marker.boundary_detected:
            return "agent_marker", 1.0, self._marker.sub_episode, None
        if self._structural.boundary_detected:
            return "structural", 1.0, self._structural.sub_episode, None
        if self._size.boundary_detected:
            return "size_cap", 1.0, False, None
        c = self.config
        if self._structural.veto or len(self._open) < c.min_turns or ev < c.doubt_threshold:
            return "", 0.0, False, None
        if c.user_anchored and turn.role != "user":
            return "", 0.0, False, None
        w = self._weights
        parts = (
            w[0] * soft[0] / c.semantic_threshold,
            w[1] * soft[1] / c.cp_threshold,
            w[2] * soft[2],
        )
        reason = SOFT[max(range(3), key=parts.__getitem__)]
        if ev >= c.cut_threshold or self.judge is None:
            return reason, ev, False, None
        answer = self._ask(turn, ev)
        if answer is None:  # the judge failed: when in doubt, split
            return reason, ev, False, None
        if answer.decision == "continue":
            scores["prediction_error"] = 0.0
            self._open.summary = answer.summary or self._open.summary
            return "", 0.0, False, None
        scores["prediction_error"] = 1.0 if answer.decision == "new" else 0.75
        return "prediction_error", ev, answer.decision == "sub-episode", answer.summary or None

    def _ask(self, turn: SegTurn, ev: float) -> JudgeAnswer | None:
        assert self.judge is not None
        request = JudgeRequest(
            summary=self._open.summary or "",
            recent_texts=list(self._open.texts),
            turn_text=turn.text[: self.config.judge_max_chars],
            evidence=min(1.0, max(0.0, ev)),
        )
        try:
            return self.judge(request)
        except LLMError:
            return None

    def _close(self, reason: str, score: float, scores: dict[str, float]) -> ClosedSegment:
        ep = self._open
        assert ep.started_at is not None
        continues = False
        if self._prev_reason == "size_cap" and self._prev_ended is not None:
            gap_min = (ep.started_at - self._prev_ended).total_seconds() / 60.0
            similar = True
            if self._prev_centroid is not None and ep.vsum is not None:
                cur = np.asarray(centroid(ep.vsum))
                similar = (
                    cur.size > 0
                    and float(cur @ self._prev_centroid) >= self.config.continuity_min_similarity
                )
            continues = gap_min <= self.config.continuity_max_gap_minutes and similar
        seg = ep.close(reason, score, scores, continues)
        self._prev_reason = reason
        self._prev_ended = seg.ended_at
        self._prev_centroid = np.asarray(seg.centroid) if seg.centroid else None
        self._open = OpenEpisode(self.config.judge_recent_turns, self.config.judge_max_chars)
        return seg

    # -- checkpoint -----------------------------------------------------
    def _signals(self) -> dict[str, Any]:
        return {
            "size_cap": self._size,
            "time_gap": self._gap,
            "idle": self._idle,
            "structural": self._structural,
            "agent_marker": self._marker,
            "semantic_shift": self._semantic,
            "change_point": self._cp,
            "surprisal": self._surprisal,
        }

    def to_state(self) -> bytes:
        """The whole detector as versioned JSON bytes."""
        state = {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "config": asdict(self.config),
            "signals": {name: s.state() for name, s in self._signals().items()},
            "open": self._open.state(),
            "last_seq": self._last_seq,
            "last_scores": self._last_scores,
            "prev": {
                "reason": self._prev_reason,
                "ended": None if self._prev_ended is None else self._prev_ended.isoformat(),
                "centroid": None if self._prev_centroid is None else self._prev_centroid.tolist(),
            },
        }
        return json.dumps(state, allow_nan=False, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_state(cls, data: bytes, judge: Judge | None = None) -> Detector:
        """Restore a detector from `to_state` output; SegmenterStateError on anything amiss."""
        try:
            state = json.loads(data)
            if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
                raise ValueError("not a detector state")
            if state.get("version") != STATE_VERSION:
                raise ValueError(f"unsupported state version {state.get('version')!r}")
            det = cls(DetectorConfig.from_dict(state["config"]), judge)
            signals = state["signals"]
            for name, sig in det._signals().items():
                sig.load_state(signals[name])
            det._open = OpenEpisode.from_state(
                state["open"], det.config.judge_recent_turns, det.config.judge_max_chars
            )
            last = state["last_seq"]
            det._last_seq = None if last is None else int(last)
            det._last_scores = {str(k): finite(v) for k, v in state["last_scores"].items()}
            prev = state["prev"]
            det._prev_reason = str(prev["reason"])
            det._prev_ended = None if prev["ended"] is None else parse_ts(prev["ended"])
            det._prev_centroid = (
                None if prev["centroid"] is None else array_from_json(prev["centroid"])
            )
        except SegmenterStateError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
            raise SegmenterStateError(f"cannot restore detector state: {exc}") from exc
        return det
