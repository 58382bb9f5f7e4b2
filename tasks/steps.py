"""Prefect tasks. Bodies stay one call deep: the work is in tasks/*.py
functions over episodic/ and storage/. Retries sit in the decorator; inputs
are plain ids, so no task hashes a database handle."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks import facts as fact_steps
from tasks import salience as salience_steps
from tasks import segment as segment_steps
from tasks.runtime import get_runtime


@task(name="segment-stream", task_run_name="segment-{stream_id}", cache_policy=NO_CACHE)
def segment_stream(
    user_id: str, stream_id: str, head_seq: int, flush: bool = False
) -> dict[str, Any]:
    rt = get_runtime()
    poll = segment_steps.poll_stream(rt, user_id, stream_id, head_seq=head_seq, flush=flush)
    return {
        "user_id": user_id,
        "stream_id": stream_id,
        "turns_read": poll.turns_read,
        "embedded": poll.embedded,
        "episodes": poll.episodes,
        "by_reason": dict(poll.by_reason),
        "open_turns": poll.open_turns,
        "watermark": poll.watermark,
        "oldest_unprocessed": poll.oldest_unprocessed.isoformat()
        if poll.oldest_unprocessed
        else None,
    }


@task(
    name="score-salience",
    task_run_name="salience-{n}-episodes",
    cache_policy=NO_CACHE,
    retries=2,
    retry_delay_seconds=1,
)
def score_salience(user_id: str, episode_ids: list[str], n: int = 0) -> dict[str, Any]:
    batch = salience_steps.score_pending(get_runtime(), user_id, episode_ids)
    return {
        "scored": batch.scored,
        "histogram": dict(batch.histogram),
        "sources": dict(batch.sources),
        "errors": batch.errors[:20],
        "salience_sum": batch.salience_sum,
    }


@task(name="merge-facts", task_run_name="facts-merge", cache_policy=NO_CACHE, retries=1)
def merge_facts(user_id: str) -> dict[str, Any]:
    batch = fact_steps.merge_pending(get_runtime(), user_id)
    return {
        "episodes": batch.episodes,
        "events": dict(batch.events),
        "decided_by": dict(batch.decided_by),
    }
