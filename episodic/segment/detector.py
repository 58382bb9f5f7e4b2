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

With `decision_delay=1` (the default) a soft candidate is held back for one
update: the anchor turn is scored together with the turn that follows it (its
reply) against the episode so far, and the cut before it is emitted when that
next turn arrives. The detector still reads each turn once, in order, with no
look-ahead; it answers one turn later. A hard cut on the next turn, a next turn
without a vector, `flush` and `close_idle` decide the held turn on its own score.
The held turn counts as open (`open_turn_ids`) and is part of the checkpoint.
"""

from __future__ import annotations

import json
import math
from dataclasses import fields
from datetime import datetime

import numpy as np

from episodic.errors import LLMError, SegmenterStateError
from episodic.segment.base import Signal, array_from_json, array_to_json, finite
from episodic.segment.bocpd import ChangePoint, Surprisal
from episodic.segment.budget import JudgeBudget
from episodic.segment.combiner import CombinerParams, LinearModel, StreamNorm, packaged
from episodic.segment.config import DetectorConfig as DetectorConfig  # re-exported
from episodic.segment.episode import OpenEpisode, centroid, parse_ts
from episodic.segment.pending import Pending
from episodic.segment.semantic import SemanticShift
from episodic.segment.signals import AgentMarker, IdleClose, SizeCap, Structural, TimeGap
from episodic.segment.types import SIGNALS, ClosedSegment, Judge, JudgeAnswer, JudgeRequest, SegTurn

STATE_FORMAT = "episodic.segment.detector"
STATE_VERSION = 3  # 2: stream mean in the semantic state, the held turn; 3: arrays in base64
SOFT = ("semantic_shift", "change_point", "surprisal")
HOLD = "hold"  # _decide: keep the turn back until its reply arrives
SEED_DUAL = "seed_dual"  # ADR-0051: P(new run) >= .65 or surprisal z >= 1.5


def clean_vector(v: np.ndarray | None) -> np.ndarray | None:
    """A unit float64 copy, or None for a missing, empty, zero or non-finite vector."""
    if v is None:
        return None
    a = np.array(v, dtype=np.float64)  # a copy: it is scaled in place
    if a.ndim != 1:
        a = a.ravel()
    if a.size == 0:
        return None
    # one dot product finds NaN, inf and zero alike; float64 cannot overflow on
    # float32 inputs of any realistic dimension
    norm2 = float(a.dot(a))
    if not (norm2 > 0.0 and math.isfinite(norm2)):
        return None
    a *= 1.0 / math.sqrt(norm2)
    return a


class Detector:
    """Cuts one stream of turns into episodes, online, one turn at a time."""

    def __init__(self, config: DetectorConfig | None = None, judge: Judge | None = None) -> None:
        self.config = c = config or DetectorConfig()
        # frozen and flat: computed once, not per checkpoint
        self._config_state = {f.name: getattr(c, f.name) for f in fields(c)}
        self.judge = judge
        self.budget = JudgeBudget(c.judge_per_1000_turns, c.judge_burst)
        self._size = SizeCap(c.max_turns, c.max_minutes)
        self._gap = TimeGap(c.time_gap_minutes)
        self._idle = IdleClose(c.idle_minutes)
        self._structural = Structural()
        self._marker = AgentMarker()
        self._semantic = SemanticShift(
            c.semantic_threshold, c.semantic_decay, c.center, c.center_prior_turns
        )
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
        self._params: CombinerParams | None = None
        self._model: LinearModel | None = None
        self._feat = None
        self._norm: StreamNorm | None = None  # the stream's score history (adaptive models)
        self._with_rule = False  # the model is an ensemble with the semantic rule
        # the ensemble's adaptive member cuts only where the rule's distance is within
        # this much of the rule's threshold (None: anywhere)
        self._gate: float | None = None
        # roles a soft cut may land before (None: any turn)
        self._anchors: frozenset[str] | None = None
        if c.user_anchored:
            self._anchors = frozenset(("user", "assistant") if c.peer_dialogue else ("user",))
        if c.combiner and c.decision_delay == 1:
            self._params = packaged(c.combiner_path or None)
            if c.combiner_model != SEED_DUAL:
                if c.combiner_model not in self._params.models:
                    raise ValueError(f"no combiner model {c.combiner_model!r} in the parameters")
                self._model = self._params.models[c.combiner_model]
                if c.combiner_threshold == 0:  # a set threshold is a fixed probability
                    self._norm = self._model.norm()
                adapt = self._model.adapt or {}
                self._with_rule = bool(adapt.get("rule", False))
                if "gate" in adapt:
                    self._gate = float(adapt["gate"])
            reads = None if self._model is None else self._model.features
            self._feat = self._params.features(reads)
        self._row: tuple[int, dict[str, float]] | None = None  # this update's row, by seq
        self._decided: tuple[int, float] | None = None  # (seq, probability) decided last
        self.band_hits = 0  # decisions in the judge band since construction (not checkpointed)
        self._after_tool_call = False
        self._weights = (c.w_semantic, c.w_change_point, c.w_surprisal)
        self._wsum = sum(self._weights)
        self._open = OpenEpisode(c.judge_recent_turns, c.judge_max_chars)
        self._last_seq: int | None = None
        self._last_scores: dict[str, float] = dict.fromkeys(SIGNALS, 0.0)
        self._pending: Pending | None = None  # an anchor turn awaiting its reply
        # the last closed segment, for the continuity check
        self._prev_reason = ""
        self._prev_ended: datetime | None = None
        self._prev_centroid: np.ndarray | None = None

    # -- public surface -------------------------------------------------
    @property
    def open_turn_ids(self) -> tuple[str, ...]:
        """Turns not yet in a closed episode, the held turn included."""
        ids = tuple(self._open.turn_ids)
        return ids if self._pending is None else (*ids, self._pending.turn.turn_id)

    @property
    def open_seqs(self) -> tuple[int, ...]:
        seqs = tuple(self._open.seqs)
        return seqs if self._pending is None else (*seqs, self._pending.turn.seq)

    @property
    def last_scores(self) -> dict[str, float]:
        return dict(self._last_scores)

    def update(self, turn: SegTurn) -> list[ClosedSegment]:
        """Score `turn`; return the episodes this closes: at most the one before a held
        turn (decided now, with `turn` as its reply) and the one before `turn`."""
        if self._last_seq is not None and turn.seq <= self._last_seq:
            return []  # a replayed turn: already absorbed
        self._last_seq = turn.seq
        self.budget.tick()
        x = clean_vector(turn.vector)
        self._after_tool_call = self._structural.last_kind == "tool-call"
        self._row = None
        self._decided = None
        if self._feat is not None and self._params is not None and x is not None:
            if x.shape[0] != self._params.mean.shape[0] and self._feat.held_seq is None:
                # the combiner's space was fitted on another embedding: the semantic rule
                self._feat = None
        feat = self._feat
        if feat is not None and self._params is not None and x is not None:
            held_seq = feat.held_seq
            want = self._pending is not None and self._pending.turn.seq == held_seq
            z = self._params.project(x)
            row = feat.update(z, turn.role, turn.text, turn.seq, want)
            if row is not None and held_seq is not None:
                self._row = (held_seq, row)
        self._size.update(turn)
        self._gap.update(turn)
        self._idle.update(turn)
        self._structural.update(turn)
        self._marker.update(turn)
        self._semantic.observe(x)
        if feat is not None:
            # the combiner's own BOCPD (learned space) gives the recorded change point
            # and surprisal: one run-length recursion per turn, not two
            cp = feat.last_cp if x is not None else 0.0
            self._surprisal.update(feat.last_log_evidence if x is not None else None)
        else:
            cp = self._cp.update(x)
            self._surprisal.update(self._cp.log_evidence)
        sur = self._surprisal.score
        closed = self._resolve(turn, x) if self._pending is not None else []
        if feat is not None and self._anchors is not None and turn.role not in self._anchors:
            # the combiner decides, and never before this turn: the rule's distance
            # would only be recorded, so it is not computed (it reads 0)
            sem = self._semantic.score_distance(0.0)
        else:
            sem = self._semantic.score_distance(self._semantic.distance_to(x))
        ev = self._evidence(sem, cp, sur)
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
        if reason == HOLD:
            t = turn
            held = SegTurn(t.seq, t.turn_id, t.role, t.kind, t.text[: self.config.judge_max_chars],
                           t.event_ts, None)  # fmt: skip
            self._pending = Pending(held, x, scores, self._semantic.distance, self._surprisal.z)
            return closed
        if reason and len(self._open):
            closed.append(self._close(reason, score, scores))
        self._admit(turn, x, self._surprisal.z, sub, summary)
        return closed

    def close_idle(self, now: datetime) -> list[ClosedSegment]:
        """Close the open episode when its last turn is older than `idle_minutes`."""
        if not len(self._open) and self._pending is None:
            return []
        score = self._idle.check(now.timestamp())
        if not self._idle.boundary_detected:
            return []
        closed = self._resolve(None, None) if self._pending is not None else []
        scores = dict.fromkeys(SIGNALS, 0.0) | {"idle": score, "combined": 0.0}
        closed.append(self._close("idle", score, scores))
        return closed

    def flush(self) -> list[ClosedSegment]:
        """Close whatever is open (end of stream); a held turn is decided on its own."""
        closed = self._resolve(None, None) if self._pending is not None else []
        if len(self._open):
            scores = dict.fromkeys(SIGNALS, 0.0) | {"combined": 0.0}
            closed.append(self._close("flush", 0.0, scores))
        return closed

    # -- decision -------------------------------------------------------
    def _evidence(self, sem: float, cp: float, sur: float) -> float:
        w, c = self._weights, self.config
        return (w[0] * sem + w[1] * min(1.0, 0.5 * cp / c.cp_threshold) + w[2] * sur) / self._wsum

    def _admit(
        self, turn: SegTurn, x: np.ndarray | None, z: float, sub: bool, summary: str | None
    ) -> None:
        """`turn` joins the open episode, or opens the next one when none is open."""
        if not len(self._open):
            self._size.restart(turn)
            self._semantic.restart(x)
            self._open.is_sub = sub
            self._open.summary = summary
        else:
            self._semantic.absorb(x)
            if summary is not None:
                self._open.summary = summary
        self._open.add(turn, x, z)

    def _resolve(self, nxt: SegTurn | None, x: np.ndarray | None) -> list[ClosedSegment]:
        """Decide the held turn, with `nxt` (its reply, vector `x`) when usable."""
        p = self._pending
        assert p is not None
        self._pending = None
        hard = self._gap.boundary_detected or self._marker.boundary_detected
        paired = nxt is not None and x is not None and p.x is not None
        if paired and not (hard or self._structural.boundary_detected):
            assert x is not None and p.x is not None
            d = self._semantic.distance_to(p.x, x)
        else:  # the next turn belongs elsewhere, or there is none: the turn alone
            d = p.distance
        sem = self._semantic.score_distance(d)
        cp, sur = p.scores["change_point"], p.scores["surprisal"]
        if self._feat is not None:
            ev, parts = self._combine(p.turn.seq)
            scores = p.scores | {"semantic_shift": sem, "combined": ev} | parts
            if self._gate is not None and d < self._semantic.threshold - self._gate:
                # the rule is sure there is no shift: the adaptive member keeps quiet
                reason, score, sub, summary = "", 0.0, False, None
            else:
                reason, score, sub, summary = self._soft_combiner(p.turn, ev, scores)
            if not reason and self._with_rule and d >= self._semantic.threshold:
                # the ensemble's other member: the previous semantic rule, at its own
                # firing point (centred distance of the turn and its reply to the
                # episode's decayed mean >= semantic_threshold)
                reason, score = "semantic_shift", sem
        else:
            ev = self._evidence(sem, cp, sur)
            scores = p.scores | {"semantic_shift": sem, "combined": ev}
            reason, score, sub, summary = self._soft(p.turn, ev, (sem, cp, sur), scores)
        if not reason:
            self._admit(p.turn, p.x, p.z, False, None)
            return []
        closed = [self._close(reason, score, scores)]
        self._admit(p.turn, p.x, p.z, sub, summary)
        if nxt is not None:
            self._size.update(nxt)  # count the next turn against the new episode
        return closed

    def _decide(
        self, turn: SegTurn, ev: float, soft: tuple[float, float, float], scores: dict[str, float]
    ) -> tuple[str, float, bool, str | None]:
        """(reason, HOLD, or "" for no cut; score; opens a sub-episode; new summary)."""
        if not len(self._open):
            return "", 0.0, False, None
        if self._gap.boundary_detected:
            return "time_gap", 1.0, False, None
        if self._marker.boundary_detected:
            return "agent_marker", 1.0, self._marker.sub_episode, None
        if self._structural.boundary_detected:
            return "structural", 1.0, self._structural.sub_episode, None
        if self._size.boundary_detected and not (turn.role == "tool" and self._after_tool_call):
            # a cap never separates a tool call from its result: it fires one turn later
            return "size_cap", 1.0, False, None
        c = self.config
        if self._structural.veto or len(self._open) < c.min_turns:
            return "", 0.0, False, None
        if self._anchors is not None and turn.role not in self._anchors:
            return "", 0.0, False, None
        if c.decision_delay:
            return HOLD, 0.0, False, None
        return self._soft(turn, ev, soft, scores)

    @property
    def last_decision(self) -> tuple[int, float] | None:
        """(seq, combiner probability) of the held turn the last call decided, if any:
        the probability of a cut before that turn, one turn late."""
        return self._decided

    @property
    def combiner_threshold(self) -> float:
        """The probability at or above which the combiner cuts now (with an adaptive
        model: the z threshold mapped through the stream's current history)."""
        c = self.config
        if c.combiner_threshold > 0:
            return c.combiner_threshold
        if self._model is None:
            return 0.5
        if self._norm is not None:
            s = self._norm.m + self._model.threshold * math.sqrt(self._norm.v + 1e-9)
            return 1.0 / (1.0 + math.exp(-s)) if s > -700 else 0.0
        return self._model.threshold

    def _combine(self, seq: int) -> tuple[float, dict[str, float]]:
        """The combiner's probability of a cut before turn `seq`, and what each feature
        added to its log-odds (`c_<feature>`), for the record. With an adaptive model
        the probability is compared with the threshold of the stream's history
        before this candidate; the candidate then joins that history."""
        assert self._feat is not None
        if self._row is not None and self._row[0] == seq:
            row: dict[str, float] | None = self._row[1]
        elif self._feat.held_seq == seq:  # no usable next turn: the turn on its own
            row = self._feat.finish()
        else:
            row = None
        thr = self.combiner_threshold
        if row is None:
            return 0.0, {"combiner": 0.0, "combiner_threshold": thr}
        extra: dict[str, float] = {}
        if self._model is None:  # the seed ADR's dual-criteria rule
            fired = row["cp"] >= 0.65 or row["sur_z"] >= 1.5
            parts = {"c_cp": row["cp"], "c_sur_z": row["sur_z"]}
            prob = 1.0 if fired else 0.0
        else:
            prob, contrib = self._model.score(row)
            parts = {f"c_{k}": v for k, v in contrib.items()}
            if self._norm is not None:
                logit = sum(contrib.values()) + self._model.intercept
                extra["combiner_z"] = self._norm.z(logit)
                self._norm.push(logit)
        self._decided = (seq, prob)
        return prob, parts | extra | {"combiner": prob, "combiner_threshold": thr}

    def _soft_combiner(
        self, turn: SegTurn, prob: float, scores: dict[str, float]
    ) -> tuple[str, float, bool, str | None]:
        """Cut at or above the threshold; in the band just below it ask the judge when
        one is injected (without one the fitted threshold stands: it was chosen as
        the decision point)."""
        thr = scores.get("combiner_threshold")
        if thr is None:  # not `get`'s default: the property is not free
            thr = self.combiner_threshold
        if prob >= thr:
            return "combiner", prob, False, None
        band = prob >= thr - self.config.combiner_band
        scores["combiner_band"] = 1.0 if band else 0.0
        self.band_hits += band
        if not band or self.judge is None or not self.budget.take():
            return "", 0.0, False, None
        answer = self._ask(turn, prob)
        if answer is None or answer.decision == "continue":
            if answer is not None:
                self._open.summary = answer.summary or self._open.summary
            return "", 0.0, False, None
        scores["prediction_error"] = 1.0 if answer.decision == "new" else 0.75
        return "prediction_error", prob, answer.decision == "sub-episode", answer.summary or None

    def _soft(
        self, turn: SegTurn, ev: float, soft: tuple[float, float, float], scores: dict[str, float]
    ) -> tuple[str, float, bool, str | None]:
        """The soft decision on an eligible anchor turn: cut, ask the judge, or continue."""
        c = self.config
        if ev < c.doubt_threshold:
            return "", 0.0, False, None
        w = self._weights
        parts = (w[0] * soft[0], w[1] * min(1.0, 0.5 * soft[1] / c.cp_threshold), w[2] * soft[2])
        reason = SOFT[max(range(3), key=parts.__getitem__)]
        if ev >= c.cut_threshold or self.judge is None or not self.budget.take():
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
    def _signals(self) -> dict[str, Signal]:
        """Every signal under its own `name`, the key of its checkpoint state."""
        signals: tuple[Signal, ...] = (
            self._size, self._gap, self._idle, self._structural, self._marker,
            self._semantic, self._cp, self._surprisal,
        )  # fmt: skip
        return {s.name: s for s in signals}

    def to_state(self) -> bytes:
        """The whole detector as versioned JSON bytes."""
        state = {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "config": self._config_state,
            "signals": {name: s.state() for name, s in self._signals().items()},
            "open": self._open.state(),
            "last_seq": self._last_seq,
            "last_scores": self._last_scores,
            "pending": None if self._pending is None else self._pending.state(),
            "features": None if self._feat is None else self._feat.state(),
            "norm": None if self._norm is None else self._norm.state(),
            "judge_credit": self.budget.state(),
            "prev": {
                "reason": self._prev_reason,
                "ended": None if self._prev_ended is None else self._prev_ended.isoformat(),
                "centroid": None
                if self._prev_centroid is None
                else array_to_json(self._prev_centroid),
            },
        }
        return json.dumps(state, allow_nan=False, separators=(",", ":")).encode("utf-8")

    @classmethod
    def from_state(
        cls, data: bytes, judge: Judge | None = None, *, idle_minutes: float | None = None
    ) -> Detector:
        """Restore a detector from `to_state` output; SegmenterStateError on anything amiss.
        `idle_minutes` replaces the saved one: the idle close is the poller's
        policy (the settings of the day), not part of the stream's state."""
        try:
            state = json.loads(data)
            if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
                raise ValueError("not a detector state")
            version = state.get("version")
            if version not in (1, 2, STATE_VERSION):
                raise ValueError(f"unsupported state version {version!r}")
            config = dict(state["config"])
            if version == 1:  # the one-turn, uncentred detector it was started as
                config |= {"center": False, "decision_delay": 0}
            if "combiner" not in config:  # started before the combiner: keep its rule
                config["combiner"] = False
            if idle_minutes is not None:
                config["idle_minutes"] = idle_minutes
            det = cls(DetectorConfig.from_dict(config), judge)
            signals = state["signals"]
            for name, sig in det._signals().items():
                sig.load_state(signals[name])
            if "features" in state and state["features"] is None:
                det._feat = None  # it ran the semantic rule (e.g. vectors of another dim)
            elif det._feat is not None and state.get("features") is not None:
                det._feat.load_state(state["features"])
            if det._norm is not None and state.get("norm") is not None:
                det._norm.load(state["norm"])
            if "judge_credit" in state:  # states from before the budget start afresh
                det.budget.load(state["judge_credit"])
            det._open = OpenEpisode.from_state(
                state["open"], det.config.judge_recent_turns, det.config.judge_max_chars
            )
            last = state["last_seq"]
            det._last_seq = None if last is None else int(last)
            det._last_scores = {str(k): finite(v) for k, v in state["last_scores"].items()}
            pending = state.get("pending")
            det._pending = None if pending is None else Pending.from_state(pending)
            if det._pending is not None and not det._open.seqs:
                raise ValueError("a held turn without an open episode")
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
