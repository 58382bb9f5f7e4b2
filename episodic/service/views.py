"""What the service returns: one type per concept, shared by every face
(CLI `--json`, HTTP, MCP, the Python client), so no two faces can disagree.

Each view is built from a stored row by its `of` constructor, in one place."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field

from episodic.models import Episode, RunUsage, Turn


class View(BaseModel):
    model_config = ConfigDict(frozen=True)

    def as_json(self) -> dict[str, Any]:
        """JSON-ready (datetimes as ISO 8601 strings)."""
        return self.model_dump(mode="json")

    @classmethod
    def copied(cls, row: BaseModel, **changed: Any) -> Self:
        """This view of a stored row: the row's fields of the same name, then `changed`."""
        return cls(**row.model_dump(include=set(cls.model_fields) - set(changed)), **changed)


class RowView(View):
    """A view whose fields are all a stored row's own."""

    @classmethod
    def of(cls, row: BaseModel) -> Self:
        return cls.copied(row)


class HitTurn(View):
    """A turn a hit returns: the hit itself or one of its neighbours."""

    turn_id: str
    stream_id: str
    seq: int
    speaker: str
    text: str
    event_ts: datetime


HIT_KINDS = ("turns", "facts", "reflections")  # what a search may return


class Hit(View):
    """One search result: what matched, the turns it returns, and every part of its score."""

    kind: str  # turn | fact | reflection
    item_id: str
    text: str
    turns: list[HitTurn]  # the returned turns: the hit (then its neighbours, if CONTEXT_TURNS)
    episode_id: str | None
    provenance: list[str]  # episodes a fact or reflection cites
    score: float
    relevance: float
    recency: float
    importance: float
    rrf: float
    text_rank: int
    dense_rank: int
    cosine: float | None
    seq: int | None = None  # a turn hit's own position in its stream

    def brief(self) -> HitBrief:
        return HitBrief.of(self)


class HitBrief(View):
    """A hit as an agent reads it (MCP `recall`, `GET /v1/recall`): the text,
    when it was said, the score, the neighbour turns as `speaker: text` lines
    and the episode; about 0.4 of a Hit's JSON, which keeps every part of the
    score for people and tests."""

    kind: str
    id: str
    text: str
    when: datetime | None = None  # a turn hit's own time
    score: float
    context: list[str] | None = None
    episode_id: str | None = None

    @classmethod
    def of(cls, h: Hit) -> HitBrief:
        own = next((t for t in h.turns if t.turn_id == h.item_id), None)
        context = [f"{t.speaker}: {t.text}" for t in h.turns if t.turn_id != h.item_id]
        return cls(
            kind=h.kind,
            id=h.item_id,
            text=h.text,
            when=own.event_ts if own is not None else None,
            score=round(h.score, 3),
            context=context or None,
            episode_id=h.episode_id,
        )

    def as_json(self) -> dict[str, Any]:
        """Without the empty fields: each one is tokens in an agent's context."""
        return self.model_dump(mode="json", exclude_none=True)


class TurnView(View):
    turn_id: str
    stream_id: str
    seq: int
    role: str
    kind: str
    speaker: str
    text: str
    event_ts: datetime

    @classmethod
    def of(cls, t: Turn) -> TurnView:
        speaker = t.meta.get("speaker")
        return cls.copied(t, speaker=speaker if isinstance(speaker, str) and speaker else t.role)


class EpisodeView(View):
    """An episode: where it sits, why it was cut, how salient it is."""

    episode_id: str
    stream_id: str
    first_seq: int
    last_seq: int
    n_turns: int
    started_at: datetime
    ended_at: datetime
    reason: str
    boundary_score: float
    signal_scores: dict[str, float]
    salience: int
    salience_source: str
    summary: str
    status: str
    parent_episode_id: str | None
    continues_episode_id: str | None

    @classmethod
    def of(cls, e: Episode) -> EpisodeView:
        return cls.copied(e, reason=e.boundary_reason, boundary_score=round(e.boundary_score, 4))


class EpisodeDetail(EpisodeView):
    turns: list[TurnView]

    @classmethod
    def with_turns(cls, e: Episode, turns: list[Turn]) -> EpisodeDetail:
        return cls(
            **EpisodeView.of(e).model_dump(),
            turns=[TurnView.of(t) for t in sorted(turns, key=lambda t: t.seq)],
        )


class FactView(RowView):
    fact_id: str
    text: str
    status: str
    valid_from: datetime
    valid_to: datetime | None
    created_at: datetime
    expired_at: datetime | None
    importance: float
    recall_count: int
    source_episode_ids: list[str]
    supersedes: str | None


class FactEvent(RowView):
    """One ADD / UPDATE / DELETE / NOOP decision on a fact."""

    fact_id: str
    event: str
    old_text: str | None
    new_text: str | None
    new_fact_id: str | None
    episode_id: str
    decided_by: str
    at: datetime


class ReflectionView(RowView):
    reflection_id: str
    text: str
    importance: float
    created_at: datetime
    evidence_episode_ids: list[str]
    evidence_fact_ids: list[str]
    recall_count: int
    status: str


class Rejection(View):
    index: int
    reason: str


class AddReceipt(View):
    """What a write of turns did: counted once the turns are durable."""

    accepted: int
    duplicates: int
    rejected: list[Rejection] = Field(default_factory=list)
    turn_ids: list[str] = Field(default_factory=list)
    ingest_id: str | None = None  # ask about it later: Memory.ingest_status


class IngestStatus(View):
    """What became of one acknowledged write: `queued` until every one of its
    turns sits in a closed episode whose facts were merged, then `consolidated`;
    `failed` when the last consolidation of one of its streams failed."""

    ingest_id: str
    at: datetime
    state: str  # queued | consolidated | failed
    turns: int
    episodes: list[str]  # closed episodes holding its turns
    facts: list[str]  # facts those episodes added or changed


class ForgetReceipt(View):
    """What a forget removed: per table, rows erased (or turns redacted); no content."""

    audit_id: str
    at: datetime
    actor: str
    kind: str  # user | turn | episode | fact
    target: str  # a hash of the user and the id
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def forget_target(**ids: str | None) -> list[tuple[str, str]]:
    """The one (kind, id) a forget names, or none for the whole user. An
    empty id is refused, never read as "no id": that would be the whole user."""
    asked = [(k, v) for k, v in ids.items() if v is not None]
    if len(asked) > 1:
        raise ValueError("forget one turn, episode or fact at a time (or the whole user)")
    if asked and not asked[0][1].strip():
        raise ValueError(f"the {asked[0][0]} id to forget is empty")
    return asked


class UsageView(View):
    """What consolidating a user's memory has asked the model, over its recent
    runs: totals, and the runs newest first."""

    user_id: str
    runs: int
    calls: int
    cache_hits: int
    input_tokens: int
    output_tokens: int
    cost_usd: float  # of the priced runs
    unpriced_runs: int  # runs on a model without a published price
    recent: list[RunUsage]  # the ledger's rows, newest first


@dataclass(frozen=True)
class StreamStatus:
    user_id: str
    stream_id: str
    raw_turns: int
    head_seq: int
    watermark: int
    unprocessed_turns: int
    # lag in processing time: since the oldest unprocessed turn was captured
    oldest_unprocessed_age_s: float | None
    oldest_unprocessed_event_ts: datetime | None
    open_episode_turns: int
    episodes: int
    last_event_ts: datetime | None
    checkpoint_updated_at: datetime | None
    last_run: str
    last_run_state: str

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        for k in ("oldest_unprocessed_event_ts", "last_event_ts", "checkpoint_updated_at"):
            v = d[k]
            d[k] = v.isoformat() if v is not None else None
        return d
