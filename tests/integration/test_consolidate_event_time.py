"""Out-of-order event times through the consolidate flow (issue 12): late
turns three days old, `ts: 0`, and a turn 23 hours in the future."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from episodic.models import Role, TurnIn, now_utc
from episodic.segment.clock import CLAMPED_KEY, FUTURE_TOLERANCE
from episodic.service.runtime import Runtime
from episodic.service.segment import poll_stream
from flows.consolidate import consolidate
from tests.integration.facts_support import memory_for, runtime_for

pytestmark = pytest.mark.usefixtures("prefect_harness")

USER = "u1"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def turn(stream: str, i: int, at: datetime, text: str = "") -> TurnIn:
    role: Role = "user" if i % 2 == 0 else "assistant"
    return TurnIn(
        user_id=USER,
        stream_id=stream,
        role=role,
        kind="user-question" if role == "user" else "assistant-answer",
        text=text or f"the billing migration, step {i}",
        event_ts=at,
        source="test",
        position=str(i),
    )


def late_stream(start: datetime) -> list[TurnIn]:
    """Four turns, one three days late, four more, one at `ts: 0`, four more."""
    out = [turn("late", i, start + timedelta(minutes=i)) for i in range(4)]
    out.append(turn("late", 4, start - timedelta(days=3), "a message from three days ago"))
    out += [turn("late", 5 + i, start + timedelta(minutes=5 + i)) for i in range(4)]
    out.append(turn("late", 9, EPOCH, "a sender without a clock"))
    out += [turn("late", 10 + i, start + timedelta(minutes=10 + i)) for i in range(4)]
    return out


def test_late_turns_get_episodes_of_their_own_and_none_ends_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = memory_for("offline", tmp_path / "home", monkeypatch)
    rt = memory.rt
    start = datetime(2025, 5, 29, 9, 0, tzinfo=UTC)
    rt.raw.append(late_stream(start))
    consolidate(user=USER, flush=True, memory=memory)
    eps = rt.episodes.list(USER, "late")
    assert all(e.started_at <= e.ended_at for e in eps)
    spans = [(e.first_seq, e.last_seq, e.boundary_reason) for e in eps]
    assert (4, 4, "time_gap") in spans and (9, 9, "time_gap") in spans
    by_first = {e.first_seq: e for e in eps}
    assert by_first[4].started_at == start - timedelta(days=3)
    assert by_first[9].started_at == by_first[9].ended_at == EPOCH
    # the stray turns did not stretch their neighbours
    others = [e for e in eps if e.first_seq not in (4, 9)]
    assert all(e.started_at >= start and e.ended_at < start + timedelta(hours=1) for e in others)
    held = sorted(s for e in eps for s in range(e.first_seq, e.last_seq + 1))
    assert held == list(range(14))


def _future_stream(rt: Runtime) -> datetime:
    """Three turns now, a fourth dated 23 hours ahead; returns the ingest time."""
    now = now_utc()
    rows = [turn("future", i, now - timedelta(minutes=3 - i)) for i in range(3)]
    rows.append(turn("future", 3, now + timedelta(hours=23), "see you tomorrow"))
    rt.raw.append(rows)
    (future,) = rt.raw.by_ids(USER, [rows[-1].turn_id])
    assert future.event_ts == rows[-1].event_ts  # raw keeps what was sent
    return future.ingest_ts


def test_a_future_turn_is_clamped_flagged_and_does_not_block_the_idle_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = runtime_for("offline", tmp_path / "home", monkeypatch)
    ingested = _future_stream(rt)
    # 20 minutes on: 15 past the clamped time, not idle yet
    early = poll_stream(rt, USER, "future", head_seq=3, now=ingested + timedelta(minutes=20))
    assert early.episodes == [] and early.open_turns == 4
    # 40 minutes on: idle for 35 > 30 minutes; unclamped it would wait 23 hours
    late = poll_stream(rt, USER, "future", head_seq=3, now=ingested + timedelta(minutes=40))
    assert late.open_turns == 0 and late.by_reason == {"idle": 1}
    (ep,) = rt.episodes.list(USER, "future")
    assert ep.ended_at == ingested + FUTURE_TOLERANCE
    assert ep.started_at <= ep.ended_at
    assert ep.signal_scores[CLAMPED_KEY] == 1.0
    # the raw row is untouched
    (raw,) = rt.raw.by_ids(USER, [ep.turn_ids[-1]])
    assert raw.event_ts > ingested + timedelta(hours=22)


def test_turns_within_the_tolerance_are_not_flagged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = memory_for("offline", tmp_path / "home", monkeypatch)
    rt = memory.rt
    now = now_utc()
    rt.raw.append([turn("near", i, now + timedelta(minutes=i)) for i in range(3)])
    consolidate(user=USER, flush=True, memory=memory)
    (ep,) = rt.episodes.list(USER, "near")
    assert CLAMPED_KEY not in ep.signal_scores
    assert ep.ended_at - ep.started_at == timedelta(minutes=2)
