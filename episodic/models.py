"""Domain models: the contract between the pure core, storage and the flows.

All datetimes are timezone-aware UTC inside the core; storage converts to the
naive UTC that LanceDB keeps and back.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from episodic.vocab import ROLES as ROLES
from episodic.vocab import TURN_KINDS as TURN_KINDS
from episodic.vocab import BoundaryReason as BoundaryReason
from episodic.vocab import EpisodeStatus, FactsState, ReflectionStatus
from episodic.vocab import FactEvent as FactEvent
from episodic.vocab import FactStatus as FactStatus
from episodic.vocab import Role as Role
from episodic.vocab import TurnKind as TurnKind


def utc(ts: datetime) -> datetime:
    """Aware UTC; a naive value is taken to be UTC already (LanceDB's convention)."""
    if ts.tzinfo is None:
        return ts.replace(tzinfo=UTC)
    return ts.astimezone(UTC)


class TurnLike(Protocol):
    """What prompts and summaries read of a turn: a `Turn`, or a test's stand-in."""

    @property
    def role(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def text(self) -> str: ...


def now_utc() -> datetime:
    return datetime.now(UTC)


def stable_id(*parts: object) -> str:
    """A short, stable hash of its parts; the basis of every idempotent key."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8"))
    return h.hexdigest()[:32]


def user_tag(user_id: str) -> str:
    """A user's name in run names, reports and events: a hash, never the id
    (Prefect keeps them where a forget cannot reach)."""
    return stable_id("user", user_id)[:8]


class TurnIn(BaseModel):
    """A parsed turn before it has a place in the raw log (no seq yet)."""

    model_config = ConfigDict(frozen=True)

    user_id: str = Field(min_length=1, max_length=512)
    stream_id: str = Field(min_length=1, max_length=512)
    role: Role
    kind: TurnKind
    text: str = Field(min_length=1)
    event_ts: datetime
    # provenance only (the file's path, "api"): never part of the turn's id
    source: str
    # where the turn sits in its transcript (line, message index), path-free
    position: str
    # the transcript's own id for the turn (a Claude Code uuid, a message id)
    native_id: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("event_ts")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        return utc(v)

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("text is empty or whitespace")
        return v

    # cached: a write reads it several times per turn (dedup, conflicts, the
    # journal); the model is frozen, so only model_copy(update=...) could make
    # it stale, and nothing copies a TurnIn that way
    @cached_property
    def turn_id(self) -> str:
        """The idempotency key, scoped by user and stream and free of the file's path.

        The transcript's own id where it has one; otherwise position and content,
        so a copy of a file maps to the same ids and two identical turns at
        different positions stay two. A synthetic time (the file's mtime and
        on) is not content: a copy has another mtime.
        """
        if self.native_id:
            return stable_id("id", self.user_id, self.stream_id, self.native_id)
        ts = "" if self.meta.get("synthetic_ts") else self.event_ts.isoformat()
        return stable_id(
            "at", self.user_id, self.stream_id, self.position, self.role, self.text, ts
        )


# what a forgotten turn's text becomes in place (its seq stays taken)
TOMBSTONE = "[forgotten]"


class Turn(BaseModel):
    """One immutable row of the raw log."""

    model_config = ConfigDict(frozen=True)

    turn_id: str
    user_id: str
    stream_id: str
    seq: int = Field(ge=0)
    role: Role
    kind: TurnKind
    text: str
    event_ts: datetime
    ingest_ts: datetime
    source: str
    position: str = ""  # where the turn sat in its transcript (see TurnIn)
    meta: dict[str, Any] = Field(default_factory=dict)

    @field_validator("event_ts", "ingest_ts")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        return utc(v)


class Rejected(BaseModel):
    """A line of input that was refused, kept whole for a later look."""

    user_id: str = ""
    stream_id: str = ""
    source: str
    line_no: int
    reason: str
    raw: bytes

    @field_validator("user_id", "stream_id", "source", "reason")
    @classmethod
    def _storable(cls, v: str) -> str:
        """Names read from undecodable bytes hold lone surrogates, which Arrow
        and the terminal refuse: keep them as visible escapes (\\udcff)."""
        return v.encode("utf-8", "backslashreplace").decode("utf-8")


class Episode(BaseModel):
    episode_id: str
    user_id: str
    stream_id: str
    first_seq: int
    last_seq: int
    turn_ids: list[str]
    n_turns: int
    started_at: datetime
    ended_at: datetime
    closed_at: datetime
    boundary_reason: str
    boundary_score: float
    signal_scores: dict[str, float] = Field(default_factory=dict)
    centroid: list[float] = Field(default_factory=list)
    peak_surprisal: float = 0.0
    summary: str = ""
    text: str = ""
    salience: int = Field(default=0, ge=0, le=10)
    salience_source: str = ""
    salience_rationale: str = ""
    recall_count: int = 0
    last_recalled_at: datetime | None = None
    strength: float = 1.0
    status: EpisodeStatus = "closed"
    parent_episode_id: str | None = None
    continues_episode_id: str | None = None
    facts_state: FactsState = FactsState.PENDING
    fact_plan: str = ""

    @staticmethod
    def make_id(user_id: str, stream_id: str, first_seq: int) -> str:
        return stable_id("episode", user_id, stream_id, first_seq)


class Fact(BaseModel):
    fact_id: str
    user_id: str
    text: str
    vector: list[float] = Field(default_factory=list)
    valid_from: datetime
    valid_to: datetime | None = None
    created_at: datetime
    expired_at: datetime | None = None
    source_episode_ids: list[str] = Field(default_factory=list)
    importance: float = 5.0
    recall_count: int = 0
    last_recalled_at: datetime | None = None
    status: FactStatus = "active"
    supersedes: str | None = None


class FactHistory(BaseModel):
    history_id: str
    user_id: str
    fact_id: str
    event: FactEvent
    old_text: str | None = None
    new_text: str | None = None
    new_fact_id: str | None = None
    episode_id: str
    decided_by: str
    at: datetime


class Reflection(BaseModel):
    reflection_id: str
    user_id: str
    text: str
    vector: list[float] = Field(default_factory=list)
    evidence_episode_ids: list[str] = Field(default_factory=list)
    evidence_fact_ids: list[str] = Field(default_factory=list)
    importance: float = 5.0
    created_at: datetime
    recall_count: int = 0
    last_recalled_at: datetime | None = None
    status: ReflectionStatus = "active"


class RunUsage(BaseModel):
    """One run's model use for one user: also the view the faces show."""

    model_config = ConfigDict(frozen=True, protected_namespaces=())

    user_id: str
    run: str
    at: datetime | None
    provider: str
    model: str
    calls: int
    cache_hits: int
    input_tokens: int
    output_tokens: int
    fallbacks: int
    failures: int
    wait_s: float
    cost_usd: float | None
