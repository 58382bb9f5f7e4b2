"""`episodic status`: where each stream stands. One row per (user, stream):
raw turns, watermark, lag (turns not yet segmented and how long the oldest
has waited), the open episode, episodes closed, and the last consolidate run
that touched the stream with its final state."""

from __future__ import annotations

from datetime import UTC, datetime

from episodic.models import now_utc
from episodic.service.runtime import Runtime
from episodic.service.views import StreamStatus
from storage.frames import frame


def stream_status(rt: Runtime, user_id: str | None = None) -> list[StreamStatus]:
    """Status of every stream (of one user when given): the stream heads, the
    checkpoints and the episodes' keys read as Arrow columns and joined by
    (user, stream). Each read is scoped to the user through storage.filters.
    Arrow rather than polars: `episodic status` is a command an operator runs
    often, and polars was a seventh of its start."""
    now = now_utc()
    rt.raw.streams(user_id)  # repairs a stale head before it is read
    keys = ["user_id", "stream_id"]
    heads = frame(rt.store, "streams", user_id, [*keys, "head_seq", "n_turns", "last_event_ts"])
    marks = {
        (m["user_id"], m["stream_id"]): m
        for m in frame(
            rt.store,
            "segmenter_state",
            user_id,
            [*keys, "watermark", "open_turn_ids", "updated_at", "last_run", "last_run_state"],
        ).to_pylist()
    }
    counted = (
        frame(rt.store, "episodes", user_id, keys).group_by(keys).aggregate([([], "count_all")])
    )
    episodes = {
        (u, s): int(n)
        for u, s, n in zip(
            counted["user_id"].to_pylist(),
            counted["stream_id"].to_pylist(),
            counted["count_all"].to_pylist(),
            strict=True,
        )
    }
    out: list[StreamStatus] = []
    for r in sorted(heads.to_pylist(), key=lambda h: (h["user_id"], h["stream_id"])):
        key = (r["user_id"], r["stream_id"])
        mark = marks.get(key, {})
        watermark = -1 if mark.get("watermark") is None else int(mark["watermark"])
        behind = max(0, int(r["head_seq"]) - watermark)
        age: float | None = None
        oldest_event: datetime | None = None
        if behind:
            first = rt.raw.read(r["user_id"], r["stream_id"], watermark, watermark + 1)
            if first:
                age = round((now - first[0].ingest_ts).total_seconds(), 1)
                oldest_event = first[0].event_ts
        out.append(
            StreamStatus(
                user_id=r["user_id"],
                stream_id=r["stream_id"],
                raw_turns=int(r["n_turns"]),
                head_seq=int(r["head_seq"]),
                watermark=watermark,
                unprocessed_turns=behind,
                oldest_unprocessed_age_s=age,
                oldest_unprocessed_event_ts=oldest_event,
                open_episode_turns=len(mark.get("open_turn_ids") or ()),
                episodes=episodes.get(key, 0),
                last_event_ts=_aware(r["last_event_ts"]),
                checkpoint_updated_at=_aware(mark.get("updated_at")),
                last_run=mark.get("last_run") or "",
                last_run_state=mark.get("last_run_state") or "",
            )
        )
    return out


def _aware(ts: datetime | None) -> datetime | None:
    """The tables store naive UTC; status reports aware datetimes."""
    return ts.replace(tzinfo=UTC) if ts is not None and ts.tzinfo is None else ts


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
