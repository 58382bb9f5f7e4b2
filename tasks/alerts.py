"""Emit `episodic.stream.lagging` for each stream whose lag is above
EPISODIC_ALERT_LAG_TURNS (0: off). The consolidate flow calls this as its
poll starts; the automation in deployments/automations.yaml notifies on it.
An alert must never fail the run it reports on: errors are logged."""

from __future__ import annotations

import logging

from episodic.alerts import StreamLag, lag_event, lagging
from episodic.models import now_utc
from episodic.service.runtime import Runtime

log = logging.getLogger(__name__)


def emit_lag_alerts(rt: Runtime, lags: list[StreamLag]) -> int:
    """Emit one event per lagging stream, with the age of its oldest waiting
    turn (read only for those streams); returns how many were emitted."""
    threshold = rt.settings.alert_lag_turns
    behind = lagging(lags, threshold)
    if not behind:
        return 0
    from prefect.events import emit_event

    now = now_utc()
    sent = 0
    for lag in behind:
        try:
            first = rt.raw.read(lag.user_id, lag.stream_id, lag.watermark, lag.watermark + 1)
            age = round((now - first[0].ingest_ts).total_seconds(), 1) if first else None
            if emit_event(**lag_event(lag, threshold, age)) is not None:
                sent += 1
        except Exception as e:  # the alert is secondary to the run
            log.warning("could not emit the lag alert of a stream: %s", e)
    return sent
