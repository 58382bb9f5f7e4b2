"""Storage growth: many polls of one turn each, then maintenance.

Each poll appends one turn through `RawLog.append` and runs `poll_stream`
on it: the same storage calls a consolidate flow run makes, without paying
a Prefect flow run per turn. The number of polls is RELIABILITY_GROWTH_POLLS
(default 250, so CI stays short; the issue asks for 10,000, which
`reliability_report.py --growth-polls 10000` runs). Then `upkeep`, the table
step of the maintain flow, compacts and drops old versions.

Asserted: nothing lost, and after upkeep every table has a bounded number of
versions and fragments whatever the number of polls. Measured and reported,
not asserted: query latency before upkeep, after it, and on a freshly built
store holding the same rows.
"""

from __future__ import annotations

import os
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.integration.reliability_support import check_invariants, record, use_home

pytestmark = pytest.mark.slow

POLLS = int(os.environ.get("RELIABILITY_GROWTH_POLLS", "250"))
# without upkeep between, each poll costs more than the last (the 500
# appends made queries 10x slower); a nightly maintain run is the remedy
UPKEEP_EVERY = int(os.environ.get("RELIABILITY_GROWTH_UPKEEP_EVERY", "2500"))
MAX_VERSIONS = 3
MAX_FRAGMENTS = 2
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def turn(i: int) -> Any:
    from episodic.models import TurnIn

    return TurnIn(
        user_id="grow",
        stream_id="s",
        role="user" if i % 2 == 0 else "assistant",
        kind="other",
        text=f"turn {i} on topic {i // 20}: details {i % 7}",
        event_ts=T0 + timedelta(minutes=i if i % 20 else i + 45),  # a gap every 20 turns
        source="growth",
        position=str(i),
    )


def shape(rt: Any) -> dict[str, tuple[int, int]]:
    return {n: (rt.store.versions(n), rt.store.fragments(n)) for n in rt.store.table_names()}


def probe(rt: Any, head: int, reps: int = 15) -> float:
    """Median seconds of the reads one poll makes when nothing is new."""
    ids = [t.turn_id for t in rt.raw.read("grow", "s", head - 10, head)]

    def once() -> None:
        rt.checkpoints.load("grow", "s")
        rt.raw.streams("grow")
        rt.raw.read("grow", "s", head - 10, head)
        rt.vectors.get("grow", ids, rt.embedder.name)
        rt.episodes.list("grow", limit=20)

    once()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        once()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def test_polls_of_one_turn_then_upkeep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from episodic.service.maintain import upkeep
    from episodic.service.segment import poll_stream

    rt = use_home(monkeypatch, tmp_path / "grown").rt
    started = time.perf_counter()
    upkeeps = 0
    for i in range(POLLS):
        assert rt.raw.append([turn(i)]).accepted == 1
        poll_stream(rt, "grow", "s", head_seq=i)
        if (i + 1) % UPKEEP_EVERY == 0 and i + 1 < POLLS:
            upkeep(rt, timedelta(0))
            upkeeps += 1
    poll_seconds = time.perf_counter() - started
    head = POLLS - 1
    grown = shape(rt)
    slow = probe(rt, head)

    upkeep(rt)  # the maintain flow's default keeps one hour of versions
    kept = shape(rt)
    upkeep(rt, timedelta(0))
    after = shape(rt)
    maintained = probe(rt, head)

    # the same rows written at once, on a fresh store
    fresh = use_home(monkeypatch, tmp_path / "fresh").rt
    fresh.raw.append([turn(i) for i in range(POLLS)])
    poll_stream(fresh, "grow", "s", head_seq=head)
    fresh.store.ensure_indexes()
    baseline = probe(fresh, head)

    check = check_invariants(rt, "grow")
    record(
        "growth",
        polls=POLLS,
        upkeeps_between=upkeeps,
        seconds_per_poll=round(poll_seconds / POLLS, 4),
        raw_versions_before=grown["raw_turns"][0],
        raw_fragments_before=grown["raw_turns"][1],
        raw_versions_kept_1h=kept["raw_turns"][0],
        max_versions_after=max(v for v, _ in after.values()),
        max_fragments_after=max(f for _, f in after.values()),
        probe_ms_grown=round(slow * 1000, 2),
        probe_ms_maintained=round(maintained * 1000, 2),
        probe_ms_fresh=round(baseline * 1000, 2),
        latency_ratio=round(maintained / baseline, 2),
        turns_lost=check.lost,
        duplicate_rows=check.duplicate_rows,
    )
    assert check.ok and check.lost == 0 and check.covered == POLLS, check
    assert rt.raw.count("grow") == POLLS
    for name, (versions, fragments) in after.items():
        assert versions <= MAX_VERSIONS, (name, versions)
        assert fragments <= MAX_FRAGMENTS, (name, fragments)
    # the polls did pile up versions (since the last upkeep in between)
    assert grown["raw_turns"][0] > min(POLLS, UPKEEP_EVERY) - 1
