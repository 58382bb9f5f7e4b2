"""Arrow schemas of every table. Every row carries `user_id`. Datetimes are
naive UTC (LanceDB's convention); the codec converts at the boundary."""

from __future__ import annotations

import pyarrow as pa

TS = pa.timestamp("us")


def vec(dim: int) -> pa.DataType:
    return pa.list_(pa.float32(), dim)


def raw_turns() -> pa.Schema:
    return pa.schema(
        [
            ("turn_id", pa.string()),
            ("user_id", pa.string()),
            ("stream_id", pa.string()),
            ("seq", pa.int64()),
            ("role", pa.string()),
            ("kind", pa.string()),
            ("text", pa.string()),
            ("event_ts", TS),
            ("ingest_ts", TS),
            ("source", pa.string()),
            ("position", pa.string()),
            ("meta", pa.string()),
        ]
    )


def streams() -> pa.Schema:
    # one row per (user, stream): the head of the raw log, so polls never scan raw
    return pa.schema(
        [
            ("key", pa.string()),
            ("user_id", pa.string()),
            ("stream_id", pa.string()),
            ("head_seq", pa.int64()),
            ("n_turns", pa.int64()),
            ("last_event_ts", TS),
            ("updated_at", TS),
        ]
    )


def turn_vectors(dim: int) -> pa.Schema:
    return pa.schema(
        [
            ("key", pa.string()),
            ("turn_id", pa.string()),
            ("user_id", pa.string()),
            ("model", pa.string()),
            ("vector", vec(dim)),
        ]
    )


def rejected_input() -> pa.Schema:
    return pa.schema(
        [
            ("reject_id", pa.string()),
            ("user_id", pa.string()),
            ("stream_id", pa.string()),
            ("source", pa.string()),
            ("line_no", pa.int64()),
            ("reason", pa.string()),
            ("raw", pa.binary()),
            ("at", TS),
        ]
    )


def episodes(dim: int) -> pa.Schema:
    return pa.schema(
        [
            ("episode_id", pa.string()),
            ("user_id", pa.string()),
            ("stream_id", pa.string()),
            ("first_seq", pa.int64()),
            ("last_seq", pa.int64()),
            ("turn_ids", pa.list_(pa.string())),
            ("n_turns", pa.int64()),
            ("started_at", TS),
            ("ended_at", TS),
            ("closed_at", TS),
            ("boundary_reason", pa.string()),
            ("boundary_score", pa.float64()),
            ("signal_scores", pa.string()),
            ("centroid", vec(dim)),
            ("peak_surprisal", pa.float64()),
            ("summary", pa.string()),
            ("text", pa.string()),
            ("salience", pa.int64()),
            ("salience_source", pa.string()),
            ("salience_rationale", pa.string()),
            ("recall_count", pa.int64()),
            ("last_recalled_at", TS),
            ("strength", pa.float64()),
            ("status", pa.string()),
            ("parent_episode_id", pa.string()),
            ("continues_episode_id", pa.string()),
            ("facts_state", pa.string()),  # "" pending | "planned" | "done"
            ("fact_plan", pa.string()),  # JSON of the decisions, applied idempotently
        ]
    )


def facts(dim: int) -> pa.Schema:
    return pa.schema(
        [
            ("fact_id", pa.string()),
            ("user_id", pa.string()),
            ("text", pa.string()),
            ("norm", pa.string()),
            ("vector", vec(dim)),
            ("valid_from", TS),
            ("valid_to", TS),
            ("created_at", TS),
            ("expired_at", TS),
            ("source_episode_ids", pa.list_(pa.string())),
            ("importance", pa.float64()),
            ("recall_count", pa.int64()),
            ("last_recalled_at", TS),
            ("status", pa.string()),
            ("supersedes", pa.string()),
        ]
    )


def fact_history() -> pa.Schema:
    return pa.schema(
        [
            ("history_id", pa.string()),
            ("user_id", pa.string()),
            ("fact_id", pa.string()),
            ("event", pa.string()),
            ("old_text", pa.string()),
            ("new_text", pa.string()),
            ("new_fact_id", pa.string()),
            ("episode_id", pa.string()),
            ("decided_by", pa.string()),
            ("at", TS),
        ]
    )


def reflections(dim: int) -> pa.Schema:
    return pa.schema(
        [
            ("reflection_id", pa.string()),
            ("user_id", pa.string()),
            ("text", pa.string()),
            ("vector", vec(dim)),
            ("evidence_episode_ids", pa.list_(pa.string())),
            ("evidence_fact_ids", pa.list_(pa.string())),
            ("importance", pa.float64()),
            ("created_at", TS),
            ("recall_count", pa.int64()),
            ("last_recalled_at", TS),
            ("status", pa.string()),
        ]
    )


def segmenter_state() -> pa.Schema:
    return pa.schema(
        [
            ("key", pa.string()),
            ("user_id", pa.string()),
            ("stream_id", pa.string()),
            ("watermark", pa.int64()),
            ("open_turn_ids", pa.list_(pa.string())),
            ("detector", pa.binary()),
            ("version", pa.int64()),
            ("last_closed_seq", pa.int64()),
            ("last_episode_id", pa.string()),
            ("updated_at", TS),
            ("last_run", pa.string()),
            ("last_run_state", pa.string()),
        ]
    )


def reflection_marks() -> pa.Schema:
    # per user: when the last reflection ran; the salience piled up since is
    # summed from the episodes closed after it, never stored twice
    return pa.schema([("user_id", pa.string()), ("last_reflected_at", TS)])
