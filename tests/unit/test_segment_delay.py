"""The one-turn decision delay and the centred semantic distance."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from episodic.segment import Detector, DetectorConfig, SegTurn, segment_stream
from episodic.segment.semantic import SemanticShift

T0 = datetime(2025, 1, 1, tzinfo=UTC)
A, B = np.eye(8, dtype=np.float32)[0], np.eye(8, dtype=np.float32)[1]


def t(i: int, v: np.ndarray | None, minutes: float | None = None) -> SegTurn:
    role = "user" if i % 2 == 0 else "assistant"
    kind = "user-question" if role == "user" else "assistant-answer"
    ts = T0 + timedelta(minutes=i if minutes is None else minutes)
    return SegTurn(i, f"t{i}", role, kind, f"text {i}", ts, v)


def test_the_cut_before_a_user_turn_is_emitted_when_its_reply_arrives() -> None:
    det = Detector()
    for i in range(6):
        assert det.update(t(i, A)) == []
    assert det.update(t(6, B)) == []  # the user turn that changes topic is held
    assert det.open_seqs == tuple(range(7)) and det.open_turn_ids[-1] == "t6"
    segs = det.update(t(7, B))  # its reply confirms the shift
    assert [s.seqs for s in segs] == [tuple(range(6))]
    assert segs[0].reason == "semantic_shift"
    assert det.open_seqs == (6, 7)


def test_a_reply_that_returns_to_the_topic_keeps_the_turn() -> None:
    # the user turn alone is far from the episode; with its reply, the pair is not
    cfg = DetectorConfig(center=False, semantic_threshold=0.8, semantic_decay=1.0)
    turns = [t(0, A), t(1, A), t(2, B), t(3, A)]
    no_delay = segment_stream(
        turns,
        DetectorConfig(center=False, semantic_threshold=0.8, semantic_decay=1.0, decision_delay=0),
    )
    assert [s.seqs for s in no_delay] == [(0, 1), (2, 3)]
    assert [s.seqs for s in segment_stream(turns, cfg)] == [(0, 1, 2, 3)]
    assert [s.seqs for s in segment_stream([t(0, A), t(1, A), t(2, B), t(3, B)], cfg)] == [
        (0, 1),
        (2, 3),
    ]


def test_flush_and_idle_decide_a_held_turn_on_its_own() -> None:
    turns = [t(i, A) for i in range(6)] + [t(6, B)]
    det = Detector()
    for turn in turns:
        det.update(turn)
    segs = det.flush()
    assert [s.seqs for s in segs] == [tuple(range(6)), (6,)]
    assert [s.reason for s in segs] == ["semantic_shift", "flush"]
    assert det.open_seqs == () and det.flush() == []
    det = Detector()
    for turn in turns:
        det.update(turn)
    assert det.close_idle(T0 + timedelta(minutes=10)) == []  # not idle yet: still held
    segs = det.close_idle(T0 + timedelta(hours=2))
    assert [s.reason for s in segs] == ["semantic_shift", "idle"]
    assert det.open_seqs == ()


def test_a_hard_cut_on_the_reply_decides_the_held_turn_alone() -> None:
    turns = [t(i, A) for i in range(6)] + [t(6, B), t(7, B, minutes=120)]
    segs = segment_stream(turns)
    assert [s.seqs for s in segs] == [tuple(range(6)), (6,), (7,)]
    assert [s.reason for s in segs] == ["semantic_shift", "time_gap", "flush"]


def test_a_held_turn_survives_a_checkpoint_exactly() -> None:
    det = Detector()
    for i in range(7):
        det.update(t(i, A if i < 6 else B))
    raw = det.to_state()
    assert json.loads(raw)["pending"]["seq"] == 6
    back = Detector.from_state(raw)
    assert back.to_state() == raw and back.open_seqs == det.open_seqs
    assert back.update(t(7, B)) == det.update(t(7, B))
    assert back.flush() == det.flush()


def test_centring_spreads_embeddings_that_share_a_direction() -> None:
    rng = np.random.default_rng(0)
    common = rng.standard_normal(32)
    topic_a, topic_b = rng.standard_normal(32), rng.standard_normal(32)

    def unit(v: np.ndarray) -> np.ndarray:
        out: np.ndarray = v / np.linalg.norm(v)
        return out

    xs = [unit(3 * common + topic_a + 0.1 * rng.standard_normal(32)) for _ in range(20)]
    xs += [unit(3 * common + topic_b + 0.1 * rng.standard_normal(32)) for _ in range(2)]
    raw, centred = SemanticShift(center=False), SemanticShift(prior_turns=0.0)
    for sig in (raw, centred):
        for x in xs[:20]:
            sig.update(x)
        sig.update(xs[20])
    assert raw.distance < 0.2 < 0.8 < centred.distance <= 2.0
    assert centred.score == pytest.approx(min(1.0, 0.5 * centred.distance / centred.threshold))
