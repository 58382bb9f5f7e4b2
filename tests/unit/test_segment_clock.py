"""Out-of-order event times: the clamp for future turns, the span of an
episode, and a gap read in either direction (issue 12)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from episodic.segment import Detector, SegTurn, segment_stream
from episodic.segment.clock import FUTURE_TOLERANCE, segment_time
from episodic.segment.episode import OpenEpisode

T0 = datetime(2025, 5, 29, 9, 0, tzinfo=UTC)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
A = np.eye(8, dtype=np.float32)[0]


def t(i: int, at: datetime, role: str = "") -> SegTurn:
    role = role or ("user" if i % 2 == 0 else "assistant")
    kind = "user-question" if role == "user" else "assistant-answer"
    return SegTurn(i, f"t{i}", role, kind, "same topic", at, A)


def test_a_turn_dated_past_the_tolerance_is_clamped_to_it() -> None:
    ingest = T0
    assert segment_time(T0 + timedelta(hours=23), ingest) == (ingest + FUTURE_TOLERANCE, True)
    within = T0 + FUTURE_TOLERANCE
    assert segment_time(within, ingest) == (within, False)
    assert segment_time(EPOCH, ingest) == (EPOCH, False)  # the past is never moved
    assert segment_time(T0 + timedelta(minutes=1), ingest, timedelta(0)) == (ingest, True)
    with pytest.raises(ValueError):
        segment_time(T0, ingest, timedelta(minutes=-1))


def test_the_open_episode_spans_min_to_max_of_its_turns() -> None:
    ep = OpenEpisode(recent=4, max_chars=100)
    for i, minutes in enumerate([10, 2, 30, 5]):
        ep.add(t(i, T0 + timedelta(minutes=minutes)), None, 0.0)
    seg = ep.close("flush", 0.0, {}, False)
    assert seg.started_at == T0 + timedelta(minutes=2)
    assert seg.ended_at == T0 + timedelta(minutes=30)


@pytest.mark.parametrize(
    "stray",
    [T0 - timedelta(days=3), EPOCH],
    ids=["three-days-late", "ts-zero"],
)
def test_a_turn_far_in_the_past_is_cut_out_on_both_sides(stray: datetime) -> None:
    """The gap is read as an absolute value: the stray turn becomes an
    episode of its own, and no episode ends before it starts."""
    times = [T0 + timedelta(minutes=m) for m in (0, 1, 2, 3)]
    turns = [t(i, at) for i, at in enumerate(times)]
    turns.append(t(4, stray, role="user"))
    turns += [t(5 + i, T0 + timedelta(minutes=4 + i)) for i in range(4)]
    segs = segment_stream(turns)
    assert [s.seqs for s in segs] == [(0, 1, 2, 3), (4,), (5, 6, 7, 8)]
    assert [s.reason for s in segs] == ["time_gap", "time_gap", "flush"]
    assert segs[1].started_at == segs[1].ended_at == stray
    assert all(s.started_at <= s.ended_at for s in segs)


def test_clock_skew_of_seconds_does_not_cut() -> None:
    times = [0, 1, 0.5, 2, 1.8, 3]  # minutes, two small steps back
    segs = segment_stream([t(i, T0 + timedelta(minutes=m)) for i, m in enumerate(times)])
    assert [s.seqs for s in segs] == [(0, 1, 2, 3, 4, 5)]
    assert segs[0].started_at == T0 and segs[0].ended_at == T0 + timedelta(minutes=3)


def test_the_span_survives_a_checkpoint() -> None:
    det = Detector()
    det.update(t(0, T0 + timedelta(minutes=5)))
    det.update(t(1, T0 + timedelta(minutes=4)))
    restored = Detector.from_state(det.to_state())
    restored.update(t(2, T0 + timedelta(minutes=6)))
    (seg,) = restored.flush()
    assert (seg.started_at, seg.ended_at) == (T0 + timedelta(minutes=4), T0 + timedelta(minutes=6))
