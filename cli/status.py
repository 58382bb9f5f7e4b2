"""`episodic status`: where each stream stands. One row per (user, stream):
raw turns, watermark, lag (turns not yet segmented and how long the oldest
has waited), the open episode, episodes closed, and the last consolidate run
that touched the stream with its final state."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime

from episodic.models import now_utc
from storage import filters
from tasks.runtime import Runtime


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


def stream_status(rt: Runtime, user_id: str | None = None) -> list[StreamStatus]:
    """Status of every stream (of one user when given). Each query is scoped to
    a user through storage.filters."""
    now = now_utc()
    heads = rt.raw.streams(user_id)
    marks = {(c.user_id, c.stream_id): c for c in rt.checkpoints.all(user_id)}
    out: list[StreamStatus] = []
    for h in heads:
        cp = marks.get((h.user_id, h.stream_id))
        watermark = cp.watermark if cp else -1
        behind = max(0, h.head_seq - watermark)
        age: float | None = None
        oldest_event: datetime | None = None
        if behind:
            first = rt.raw.read(h.user_id, h.stream_id, watermark, watermark + 1)
            if first:
                age = round((now - first[0].ingest_ts).total_seconds(), 1)
                oldest_event = first[0].event_ts
        n_eps = int(
            rt.episodes.table.count_rows(filters.sql(filters.stream(h.user_id, h.stream_id)))
        )
        out.append(
            StreamStatus(
                user_id=h.user_id,
                stream_id=h.stream_id,
                raw_turns=h.n_turns,
                head_seq=h.head_seq,
                watermark=watermark,
                unprocessed_turns=behind,
                oldest_unprocessed_age_s=age,
                oldest_unprocessed_event_ts=oldest_event,
                open_episode_turns=len(cp.open_turn_ids) if cp else 0,
                episodes=n_eps,
                last_event_ts=h.last_event_ts,
                checkpoint_updated_at=cp.updated_at if cp else None,
                last_run=cp.last_run if cp else "",
                last_run_state=cp.last_run_state if cp else "",
            )
        )
    return out


def human_age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172_800:
        return f"{s // 3600}h"
    return f"{s // 86_400}d"
