"""`episodic status`: where each stream stands. One row per (user, stream):
raw turns, watermark, lag (turns not yet segmented and how long the oldest
has waited), the open episode, episodes closed, and the last consolidate run
that touched the stream with its final state."""

from __future__ import annotations

from datetime import UTC, datetime

from episodic.models import now_utc
from episodic.service.runtime import Runtime
from episodic.service.views import StreamStatus


def stream_status(rt: Runtime, user_id: str | None = None) -> list[StreamStatus]:
    """Status of every stream (of one user when given): the stream heads, the
    checkpoints and the episodes read as Arrow columns and joined in polars.
    Each read is scoped to the user through storage.filters."""
    import polars as pl

    from storage.frames import frame

    def read(table: str, columns: list[str]) -> pl.DataFrame:
        df = pl.from_arrow(frame(rt.store, table, user_id, columns))
        if not isinstance(df, pl.DataFrame):  # an Arrow table converts to a frame
            raise TypeError(f"{table}: polars read a {type(df).__name__}, not a DataFrame")
        return df

    now = now_utc()
    rt.raw.streams(user_id)  # repairs a stale head before it is read
    keys = ["user_id", "stream_id"]
    heads = read("streams", [*keys, "head_seq", "n_turns", "last_event_ts"])
    marks = read(
        "segmenter_state",
        [*keys, "watermark", "open_turn_ids", "updated_at", "last_run", "last_run_state"],
    ).with_columns(pl.col("open_turn_ids").list.len().alias("open_episode_turns"))
    episodes = read("episodes", keys).group_by(keys).len("episodes")
    table = (
        heads.join(marks.drop("open_turn_ids"), on=keys, how="left")
        .join(episodes, on=keys, how="left")
        .with_columns(
            pl.col("watermark").fill_null(-1),
            pl.col("open_episode_turns").fill_null(0),
            pl.col("episodes").fill_null(0),
            pl.col("last_run").fill_null(""),
            pl.col("last_run_state").fill_null(""),
        )
        .with_columns((pl.col("head_seq") - pl.col("watermark")).clip(0).alias("behind"))
        .sort(keys)
    )
    out: list[StreamStatus] = []
    for r in table.iter_rows(named=True):
        age: float | None = None
        oldest_event: datetime | None = None
        if r["behind"]:
            w = int(r["watermark"])
            first = rt.raw.read(r["user_id"], r["stream_id"], w, w + 1)
            if first:
                age = round((now - first[0].ingest_ts).total_seconds(), 1)
                oldest_event = first[0].event_ts
        out.append(
            StreamStatus(
                user_id=r["user_id"],
                stream_id=r["stream_id"],
                raw_turns=int(r["n_turns"]),
                head_seq=int(r["head_seq"]),
                watermark=int(r["watermark"]),
                unprocessed_turns=int(r["behind"]),
                oldest_unprocessed_age_s=age,
                oldest_unprocessed_event_ts=oldest_event,
                open_episode_turns=int(r["open_episode_turns"]),
                episodes=int(r["episodes"]),
                last_event_ts=_aware(r["last_event_ts"]),
                checkpoint_updated_at=_aware(r["updated_at"]),
                last_run=r["last_run"],
                last_run_state=r["last_run_state"],
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
