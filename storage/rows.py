"""Rows of the tables that have no domain model: a stream's head, a segmenter
checkpoint, a turn's vector, a user's reflection mark. Their typed fields are
the tables' columns (`storage.schemas` derives the Arrow schemas from them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from episodic.models import stable_id


def stream_key(user_id: str, stream_id: str) -> str:
    return stable_id("stream", user_id, stream_id)


def state_key(user_id: str, stream_id: str) -> str:
    return stable_id("segmenter", user_id, stream_id)


@dataclass(frozen=True)
class StreamHead:
    user_id: str
    stream_id: str
    head_seq: int
    n_turns: int
    last_event_ts: datetime | None

    @property
    def key(self) -> str:
        return stream_key(self.user_id, self.stream_id)


@dataclass
class Checkpoint:
    user_id: str
    stream_id: str
    watermark: int = -1  # last seq fed to the detector
    open_turn_ids: list[str] = field(default_factory=list)
    detector: bytes = b""
    version: int = 0
    last_closed_seq: int = -1
    last_episode_id: str = ""
    updated_at: datetime | None = None
    last_run: str = ""
    last_run_state: str = ""

    @property
    def key(self) -> str:
        return state_key(self.user_id, self.stream_id)


@dataclass(frozen=True)
class TurnVector:
    key: str
    turn_id: str
    user_id: str
    model: str
    vector: list[float]


@dataclass(frozen=True)
class ReflectionMark:
    user_id: str
    last_reflected_at: datetime
