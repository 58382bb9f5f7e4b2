"""The lag alert's decision and its event, as plain data: which streams are
behind, and the Prefect event that says so (tasks/alerts.py emits it; the
automation in deployments/automations.yaml turns it into a notification).

A stream's lag is what `episodic status` calls its unprocessed turns: the
raw turns above the watermark when a consolidate poll starts. A healthy
schedule keeps it near one poll's worth of ingest; it grows when runs fail,
stop or cannot keep up."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from episodic.models import user_tag

LAG_EVENT = "episodic.stream.lagging"
RESOURCE_PREFIX = "episodic.stream."


@dataclass(frozen=True)
class StreamLag:
    user_id: str
    stream_id: str
    unprocessed_turns: int
    watermark: int
    head_seq: int


MAX_STREAMS = 20  # per poll: a bulk import of many users is not a page of alerts


def lagging(lags: Iterable[StreamLag], threshold: int, limit: int = MAX_STREAMS) -> list[StreamLag]:
    """The streams whose lag is above `threshold`, most behind first, at most
    `limit` of them; none when the threshold is 0 (off)."""
    if threshold < 0:
        raise ValueError(f"threshold must be >= 0, got {threshold}")
    if threshold == 0:
        return []
    behind = [x for x in lags if x.unprocessed_turns > threshold]
    behind.sort(key=lambda x: (-x.unprocessed_turns, x.user_id, x.stream_id))
    return behind[:limit]


def lag_event(lag: StreamLag, threshold: int, oldest_age_s: float | None = None) -> dict[str, Any]:
    """Keyword arguments of prefect.events.emit_event for one lagging stream.
    The resource names the stream and a hash of its user (`user_tag`: Prefect
    keeps events where a forget cannot reach), never turn text."""
    who = user_tag(lag.user_id)
    return {
        "event": LAG_EVENT,
        "resource": {
            "prefect.resource.id": f"{RESOURCE_PREFIX}{who}.{lag.stream_id}",
            "prefect.resource.name": f"{who}/{lag.stream_id}",
            "episodic.user": who,
            "episodic.stream": lag.stream_id,
        },
        "payload": {
            "unprocessed_turns": lag.unprocessed_turns,
            "threshold": threshold,
            "watermark": lag.watermark,
            "head_seq": lag.head_seq,
            "oldest_unprocessed_age_s": oldest_age_s,
        },
    }
