"""Every threshold of the boundary detector, declared once: the detector reads
its `DetectorConfig`, and each signal's constructor defaults to the same
values (`DEFAULTS`), so a signal built on its own agrees with the detector."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from episodic.segment.base import positive


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
    semantic_threshold: float = 1.075  # centred cosine distance to the decayed mean, (0, 2]
    semantic_decay: float = 0.7  # weight of the newest turn in that mean
    center: bool = True  # subtract the stream's running mean before cosines
    center_prior_turns: float = 10.0  # shrinks that mean toward 0 early in a stream
    decision_delay: int = 1  # 1: score an anchor turn with its reply, cut one update later
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
    # both sides of the stream are people (a chat between two humans, as in LoCoMo,
    # REALTALK, TIAGE): either speaker can change the topic, so a soft cut may also
    # land before an assistant-role turn. An agent's stream keeps it off (default)
    peer_dialogue: bool = False
    min_turns: int = 2  # soft cuts only once the episode holds this many turns
    # the calibrated combiner (combiner.py, docs/segmentation.md): when on, its
    # probability alone makes the soft decision, against its own threshold. It
    # decides one turn late, so with decision_delay=0, or on vectors of another
    # dimension than its space, the detector keeps the semantic rule above
    combiner: bool = True
    # a model of the parameter file, or "seed_dual" (ADR-0051). "stream" (combiner v2):
    # the stream-adaptive score and the semantic rule above, either one cuts
    combiner_model: str = "stream"
    combiner_path: str = ""  # "": the packaged combiner_v1.npz
    combiner_threshold: float = 0.0  # 0: the model's own fitted threshold
    combiner_band: float = 0.1  # [threshold - band, threshold): ask the judge, if one is set
    # continuity after a size-cap cut
    continuity_max_gap_minutes: float = 60.0
    continuity_min_similarity: float = 0.5
    # judge context
    judge_recent_turns: int = 6
    judge_max_chars: int = 2000
    # judge cost: at most this many asks per 1,000 turns of a stream (budget.py); a
    # doubt past the allowance is decided as without a judge. 0: never ask
    judge_per_1000_turns: float = 30.0
    judge_burst: float = 3.0

    def __post_init__(self) -> None:
        pos = ("max_minutes", "time_gap_minutes", "idle_minutes", "obs_var", "prior_var")
        for name in pos:
            positive(name, getattr(self, name))
        unit = ("cp_threshold", "semantic_decay")
        for name in unit:
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in (0, 1]")
        if not 0.0 < self.semantic_threshold <= 2.0:
            raise ValueError("semantic_threshold must be in (0, 2]")
        if not (self.center_prior_turns >= 0 and math.isfinite(self.center_prior_turns)):
            raise ValueError("center_prior_turns must be >= 0 and finite")
        if self.decision_delay not in (0, 1):
            raise ValueError("decision_delay must be 0 or 1")
        if not 0.0 < self.surprisal_rate < 1.0:
            raise ValueError("surprisal_rate must be in (0, 1)")
        positive("surprisal_threshold", self.surprisal_threshold)
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
        if not 0.0 <= self.judge_per_1000_turns <= 1000.0 or not 1.0 <= self.judge_burst < 1e6:
            raise ValueError("need 0 <= judge_per_1000_turns <= 1000 and 1 <= judge_burst")
        if not 0.0 <= self.combiner_threshold < 1.0 or not 0.0 <= self.combiner_band < 1.0:
            raise ValueError("combiner_threshold and combiner_band must be in [0, 1)")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DetectorConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown config keys: {sorted(unknown)}")
        return cls(**data)


DEFAULTS = DetectorConfig()
