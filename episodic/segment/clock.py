"""Event time as the segmenter reads it.

Event times come from the sender's clock and are trusted for ordering inside
a stream, within limits. A turn dated further in the future than
`FUTURE_TOLERANCE` past the moment it reached us (its ingest time) cannot be
right: it would hold an episode open until that future moment and stretch its
span. Such a turn is segmented at `ingest_ts + tolerance` instead and counted
as clamped on its episode (`signal_scores["clamped_future_turns"]`); the raw
row keeps the time it was sent with.

Turns dated in the past are not moved, however old (a late sync, `ts: 0`):
the time-gap signal reads the distance between neighbours in either
direction (see `TimeGap`), and an episode spans the min to the max of its
turns' times, so it never ends before it starts.
"""

from __future__ import annotations

from datetime import datetime, timedelta

FUTURE_TOLERANCE = timedelta(minutes=5)
CLAMPED_KEY = "clamped_future_turns"


def segment_time(
    event_ts: datetime, ingest_ts: datetime, tolerance: timedelta = FUTURE_TOLERANCE
) -> tuple[datetime, bool]:
    """(the time the segmenter uses, whether it was clamped)."""
    if tolerance < timedelta(0):
        raise ValueError("tolerance must be >= 0")
    limit = ingest_ts + tolerance
    if event_ts > limit:
        return limit, True
    return event_ts, False
