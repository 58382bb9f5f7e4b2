"""The segmenter's input and output: a turn with its vector, a closed segment, the judge seam."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

ROLES = ("user", "assistant", "tool", "system")
SIGNALS = (
    "size_cap",
    "time_gap",
    "idle",
    "structural",
    "agent_marker",
    "semantic_shift",
    "change_point",
    "surprisal",
    "prediction_error",
)


@dataclass(frozen=True)
class SegTurn:
    """One turn as the detector sees it: the raw row's fields plus its embedding."""

    seq: int
    turn_id: str
    role: str  # user | assistant | tool | system
    kind: str  # user-question | user-correction | ... | system-event | other
    text: str
    event_ts: datetime  # aware UTC
    vector: np.ndarray | None  # float32, L2-normalised; None: no semantic signals
    # `event_ts` in POSIX seconds, computed once: three signals read it per turn
    ts: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ts", self.event_ts.timestamp())


@dataclass(frozen=True)
class ClosedSegment:
    """An episode the detector has closed, with why and how strongly it cut."""

    seqs: tuple[int, ...]
    turn_ids: tuple[str, ...]
    started_at: datetime
    ended_at: datetime
    reason: str
    score: float
    signal_scores: dict[str, float]
    centroid: list[float]
    peak_surprisal: float
    is_sub_episode: bool
    continues_previous: bool
    summary: str | None


class JudgeRequest(BaseModel):
    """What the prediction-error judge sees: the episode so far and the next turn."""

    model_config = ConfigDict(frozen=True)

    summary: str
    recent_texts: list[str]
    turn_text: str
    evidence: float = Field(ge=0.0, le=1.0)


class JudgeAnswer(BaseModel):
    model_config = ConfigDict(frozen=True)

    decision: Literal["continue", "new", "sub-episode"]
    summary: str = Field(default="", max_length=2000)


Judge = Callable[[JudgeRequest], JudgeAnswer]
