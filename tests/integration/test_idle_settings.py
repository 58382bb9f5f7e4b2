"""EPISODIC_IDLE_MINUTES reaches the detector (issue 13): the poll's idle gate
and the detector's idle close read the same setting, so lowering it works,
fractions included. The clock is injected (`poll_streams(now=...)`) except in
the one acceptance test, which waits 10 real seconds between two flows."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest

from episodic.adapters.embedded import Memory
from episodic.models import now_utc
from episodic.service.ingest import ingest_file
from episodic.service.runtime import Runtime
from episodic.service.segment import poll_stream
from flows.consolidate import consolidate
from tests.integration.helpers import make_memory, settings_at, synthetic_stream, write_jsonl

USER, STREAM = "u1", "s1"


def _ingest(rt: Runtime, tmp_path: Path, n_per_topic: int = 2) -> int:
    turns = synthetic_stream(user=USER, stream=STREAM, n_per_topic=n_per_topic)
    ingest_file(rt.raw, write_jsonl(tmp_path / "t.jsonl", turns), "jsonl")
    return len(turns)


def _poll(rt: Runtime, head: int, after: timedelta):  # type: ignore[no-untyped-def]
    return poll_stream(rt, USER, STREAM, head_seq=head, now=now_utc() + after)


def test_lowering_idle_minutes_closes_sooner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_IDLE_MINUTES", "0.1")  # six seconds
    rt = make_memory(tmp_path / "home").rt
    assert rt.settings.idle_minutes == rt.settings.segment.idle_minutes == 0.1
    n = _ingest(rt, tmp_path)
    first = _poll(rt, n - 1, timedelta(0))
    assert first.open_turns > 0 and not first.by_reason["idle"]
    # 10 s later, well under the 30-minute default: the open episode closes
    later = _poll(rt, n - 1, timedelta(seconds=10))
    assert later.open_turns == 0
    assert later.by_reason == {"idle": 1}
    last = max(rt.episodes.list(USER), key=lambda e: e.last_seq)
    assert last.boundary_reason == "idle" and last.last_seq == n - 1


def test_a_checkpoint_started_under_the_default_follows_a_lowered_setting(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    with Memory(settings_at(home)) as memory:  # the 30-minute default
        rt = memory.rt
        n = _ingest(rt, tmp_path)
        assert _poll(rt, n - 1, timedelta(0)).open_turns > 0
        assert _poll(rt, n - 1, timedelta(minutes=5)).open_turns > 0  # 5 < 30
    with Memory(settings_at(home, idle_minutes=0.5)) as memory:
        polled = _poll(memory.rt, n - 1, timedelta(minutes=5))  # the saved detector said 30
    assert polled.open_turns == 0 and polled.by_reason == {"idle": 1}


def test_raising_idle_minutes_keeps_the_episode_open(tmp_path: Path) -> None:
    rt = make_memory(tmp_path / "home", idle_minutes=120).rt
    n = _ingest(rt, tmp_path)
    assert _poll(rt, n - 1, timedelta(minutes=60)).open_turns > 0
    done = _poll(rt, n - 1, timedelta(minutes=121))
    assert done.open_turns == 0 and done.by_reason == {"idle": 1}


@pytest.mark.usefixtures("prefect_harness")
def test_idle_minutes_tenth_ingest_consolidate_wait_consolidate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's acceptance: EPISODIC_IDLE_MINUTES=0.1; ingest, consolidate,
    consolidate again 10 s later: no open turn, the last episode cut by idle."""
    monkeypatch.setenv("EPISODIC_IDLE_MINUTES", "0.1")
    memory = make_memory(tmp_path / "home")
    rt = memory.rt
    n = _ingest(rt, tmp_path)
    ingested = time.monotonic()
    first = consolidate(user=USER, memory=memory)
    assert isinstance(first, dict)
    assert first["turns_processed"] == n
    if time.monotonic() - ingested < 5:  # a loaded machine may take the 6 s itself
        assert first["open_turns"] > 0
    time.sleep(10)
    second = consolidate(user=USER, memory=memory)
    assert isinstance(second, dict)
    assert second["open_turns"] == 0
    assert rt.checkpoints.progress(USER)[(USER, STREAM)] == (n - 1, False)
    eps = sorted(rt.episodes.list(USER), key=lambda e: e.first_seq)
    assert [s for e in eps for s in range(e.first_seq, e.last_seq + 1)] == list(range(n))
    assert eps[-1].boundary_reason == "idle"
