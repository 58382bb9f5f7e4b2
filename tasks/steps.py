"""Prefect tasks. Bodies stay one call deep: the work is in episodic/service
(the consolidation steps), over the memory the flow was handed. Retries sit
in the decorator; a task's first input is that memory (slotted: Prefect
records it as `<Memory>`, never walks into its store), the rest plain ids."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from episodic.service import facts as fact_steps
from episodic.service import salience as salience_steps
from episodic.service import segment as segment_steps
from episodic.service.memory import Memory
from episodic.vocab import Stage
from storage.allocator import release


@task(name="segment-streams", task_run_name="segment-{n}-streams", cache_policy=NO_CACHE)
def segment_streams(
    memory: Memory, user_id: str, streams: list[tuple[str, int]], flush: bool = False, n: int = 0
) -> list[dict[str, Any]]:
    """Every stream of one user with work, in one task: a Prefect task run per
    stream cost more than the stream's own work."""
    polls = segment_steps.poll_streams(memory.rt, user_id, streams, flush=flush)
    return [
        {
            "user_id": user_id,
            "stream_id": p.stream_id,
            "turns_read": p.turns_read,
            "embedded": p.embedded,
            "episodes": p.episodes,
            "by_reason": dict(p.by_reason),
            "open_turns": p.open_turns,
            "watermark": p.watermark,
            "oldest_unprocessed": p.oldest_unprocessed.isoformat()
            if p.oldest_unprocessed
            else None,
        }
        for p in polls
    ]


@task(
    name="score-salience",
    task_run_name="salience-{n}-episodes",
    cache_policy=NO_CACHE,
    retries=2,
    retry_delay_seconds=1,
)
def score_salience(
    memory: Memory, user_id: str, episode_ids: list[str], n: int = 0
) -> dict[str, Any]:
    rt = memory.rt
    with rt.stages.measure(Stage.SALIENCE):
        batch = salience_steps.score_pending(rt, user_id, episode_ids)
    release()  # the chunk's turns and vectors, freed, back to the OS
    return {
        "scored": batch.scored,
        "histogram": dict(batch.histogram),
        "sources": dict(batch.sources),
        "errors": batch.errors[:20],
        "salience_sum": batch.salience_sum,
    }


@task(name="merge-facts", task_run_name="facts-merge", cache_policy=NO_CACHE, retries=1)
def merge_facts(memory: Memory, user_id: str) -> dict[str, Any]:
    rt = memory.rt
    with rt.stages.measure(Stage.FACTS):
        batch = fact_steps.merge_pending(rt, user_id)
    return {
        "episodes": batch.episodes,
        "events": dict(batch.events),
        "decided_by": dict(batch.decided_by),
    }
