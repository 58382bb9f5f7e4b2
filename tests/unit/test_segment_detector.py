"""The detector's rules, its checkpoint, and bad input."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from episodic.errors import LLMError, SegmenterStateError
from episodic.segment import (
    Detector,
    DetectorConfig,
    JudgeAnswer,
    JudgeRequest,
    SegTurn,
    segment_stream,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)
A, B = np.eye(8, dtype=np.float32)[0], np.eye(8, dtype=np.float32)[1]


def t(
    i: int,
    role: str = "user",
    kind: str = "",
    text: str = "x",
    v: np.ndarray | None = A,
    minutes: float | None = None,
) -> SegTurn:
    kind = kind or ("user-question" if role == "user" else "assistant-answer")
    return SegTurn(
        i, f"t{i}", role, kind, text, T0 + timedelta(minutes=i if minutes is None else minutes), v
    )


def topics(n: int, switch: int) -> list[SegTurn]:
    return [t(i, "user" if i % 2 == 0 else "assistant", v=A if i < switch else B) for i in range(n)]


def test_semantic_shift_cuts_before_the_user_turn_that_changes_topic() -> None:
    segs = segment_stream(topics(12, 6))
    assert [s.seqs for s in segs] == [tuple(range(6)), tuple(range(6, 12))]
    assert segs[0].reason == "semantic_shift" and segs[1].reason == "flush"
    assert segs[0].signal_scores["semantic_shift"] >= 0.5  # threshold maps to 0.5
    assert set(segs[0].signal_scores) >= {
        "size_cap",
        "time_gap",
        "change_point",
        "surprisal",
        "prediction_error",
    }
    assert segs[0].centroid == pytest.approx(A.tolist())


def test_soft_boundary_waits_for_a_user_turn_when_anchored() -> None:
    # the one-turn, uncentred path, where a turn is decided on its own
    cfg = DetectorConfig(semantic_threshold=0.5, semantic_decay=0.3, center=False, decision_delay=0)
    anchored = segment_stream(topics(12, 5), cfg)  # the shift lands on an assistant turn
    assert anchored[0].seqs == tuple(range(6))
    free = segment_stream(topics(12, 5), replace(cfg, user_anchored=False))
    assert free[0].seqs == tuple(range(5))


def test_size_cap_and_continuity() -> None:
    cfg = DetectorConfig(max_turns=4)
    segs = segment_stream([t(i) for i in range(10)], cfg)
    assert [len(s.seqs) for s in segs] == [4, 4, 2]
    assert [s.reason for s in segs] == ["size_cap", "size_cap", "flush"]
    assert [s.continues_previous for s in segs] == [False, True, True]


def test_time_gap_cuts_and_breaks_continuity() -> None:
    turns = [t(0, minutes=0), t(1, minutes=1), t(2, minutes=40), t(3, minutes=41)]
    segs = segment_stream(turns)
    assert [s.reason for s in segs] == ["time_gap", "flush"]
    assert segs[0].seqs == (0, 1)


def test_structural_rules_in_the_detector() -> None:
    turns = [
        t(0),
        t(1, "assistant"),
        t(2, "system", "system-event"),
        t(3, "tool", "tool-error"),
        t(4, "user", "user-question"),
        t(5, "user", "user-correction", v=B),  # a correction never cuts, however far
    ]
    segs = segment_stream(turns)
    assert [s.seqs for s in segs] == [(0, 1), (2, 3), (4, 5)]
    assert [s.reason for s in segs] == ["structural", "structural", "flush"]
    assert [s.is_sub_episode for s in segs] == [False, False, True]


def test_agent_markers_are_authoritative() -> None:
    turns = [
        t(0),
        t(1, "assistant", text="done <episode_boundary>"),
        t(2),
        t(3, "assistant", text="<new_subtask> tests"),
        t(4),
    ]
    segs = segment_stream(turns)
    assert [s.seqs for s in segs] == [(0, 1), (2,), (3, 4)]
    assert [s.reason for s in segs[:2]] == ["agent_marker", "agent_marker"]
    assert segs[2].is_sub_episode


def test_idle_close_and_flush() -> None:
    det = Detector()
    assert det.close_idle(T0) == [] and det.flush() == []
    det.update(t(0, minutes=0))
    assert det.close_idle(T0 + timedelta(minutes=10)) == []
    closed = det.close_idle(T0 + timedelta(minutes=31))
    assert [c.reason for c in closed] == ["idle"] and det.open_seqs == ()


def test_replayed_turns_are_ignored() -> None:
    det = Detector()
    det.update(t(0))
    det.update(t(1))
    assert det.update(t(1)) == [] and det.update(t(0)) == []
    assert det.open_seqs == (0, 1) and det.open_turn_ids == ("t0", "t1")


class Judge:
    def __init__(self, decision: str) -> None:
        self.decision = decision
        self.asked: list[JudgeRequest] = []

    def __call__(self, req: JudgeRequest) -> JudgeAnswer:
        self.asked.append(req)
        if self.decision == "fail":
            raise LLMError("stub", "m", "down")
        return JudgeAnswer(decision=self.decision, summary=f"about {req.turn_text}")  # type: ignore[arg-type]


def ambiguous() -> tuple[DetectorConfig, list[SegTurn]]:
    # distance 1 - cos(60 deg) = 0.5 -> evidence 0.5 * 0.5 / 0.45 = 0.556, inside [0.5, 0.6);
    # uncentred so the geometry is exact; the turn and its reply share the vector
    c = np.array([0.5, math.sqrt(3) / 2, 0, 0, 0, 0, 0, 0], dtype=np.float32)
    cfg = DetectorConfig(semantic_threshold=0.45, semantic_decay=1.0, center=False)
    return cfg, [t(0), t(1, "assistant"), t(2, text="next", v=c), t(3, "assistant", v=c)]


@pytest.mark.parametrize(
    ("decision", "reasons", "sub"),
    [
        ("continue", ["flush"], [False]),
        ("new", ["prediction_error", "flush"], [False, False]),
        ("sub-episode", ["prediction_error", "flush"], [False, True]),
        ("fail", ["semantic_shift", "flush"], [False, False]),
    ],
)
def test_judge_is_asked_only_in_the_doubt_band(
    decision: str, reasons: list[str], sub: list[bool]
) -> None:
    cfg, turns = ambiguous()
    judge = Judge(decision)
    segs = segment_stream(turns, cfg, judge)
    assert len(judge.asked) == 1
    assert judge.asked[0].turn_text == "next" and judge.asked[0].recent_texts == ["x", "x"]
    assert [s.reason for s in segs] == reasons
    assert [s.is_sub_episode for s in segs] == sub
    if decision in ("new", "sub-episode"):
        assert segs[1].summary == "about next" and segs[0].summary is None
    if decision == "continue":
        assert segs[0].summary == "about next"


def doubting(n: int) -> tuple[DetectorConfig, list[SegTurn]]:
    """Every topic switch lands in the doubt band: two vectors 60 degrees apart."""
    cfg, turns = ambiguous()
    c = turns[2].vector
    vec = [A if (i // 4) % 2 == 0 else c for i in range(n)]
    roles = ["user" if i % 2 == 0 else "assistant" for i in range(n)]
    return cfg, [t(i, roles[i], text=f"turn {i}", v=vec[i]) for i in range(n)]


@pytest.mark.parametrize(("per_1000", "burst"), [(50.0, 1.0), (100.0, 3.0), (0.0, 1.0)])
def test_the_judge_is_asked_within_its_budget_and_a_refused_doubt_splits(
    per_1000: float, burst: float
) -> None:
    cfg, turns = doubting(400)
    unbounded = Judge("new")
    free_cfg = replace(cfg, judge_per_1000_turns=1000.0, judge_burst=1e5)
    free = segment_stream(turns, free_cfg, unbounded)
    assert len(unbounded.asked) >= 90  # every switch is a doubt: about one in four turns
    judge = Judge("new")
    budget = replace(cfg, judge_per_1000_turns=per_1000, judge_burst=burst)
    segs = segment_stream(turns, budget, judge)
    assert len(judge.asked) <= (per_1000 > 0) + per_1000 * len(turns) / 1000
    assert len(judge.asked) >= (0 if per_1000 == 0 else per_1000 * len(turns) / 1000 - burst)
    # a doubt the budget refuses is decided as without a judge (it splits): same cuts
    assert [s.seqs for s in segs] == [s.seqs for s in free]
    assert [s.seqs for s in segment_stream(turns, cfg)] == [s.seqs for s in free]


def test_the_judge_budget_survives_a_checkpoint() -> None:
    cfg, turns = doubting(400)
    cfg = replace(cfg, judge_per_1000_turns=60.0)
    whole = Judge("new")
    segment_stream(turns, cfg, whole)
    parts = Judge("new")
    det = Detector(cfg, parts)
    for turn in turns[:201]:
        det.update(turn)
    det = Detector.from_state(det.to_state(), parts)
    for turn in turns[201:]:
        det.update(turn)
    det.flush()
    assert len(whole.asked) >= 20
    assert [r.turn_text for r in parts.asked] == [r.turn_text for r in whole.asked]
    assert [r.evidence for r in parts.asked] == [r.evidence for r in whole.asked]


def test_without_a_judge_doubt_splits() -> None:
    cfg, turns = ambiguous()
    assert [s.reason for s in segment_stream(turns, cfg)] == ["semantic_shift", "flush"]


@pytest.mark.parametrize(
    "vector",
    [
        None,
        np.zeros(8, np.float32),
        np.full(8, np.nan, np.float32),
        np.array([np.inf] + [0] * 7, np.float32),
        np.full(8, 1e38, np.float32),
    ],
)
def test_bad_vectors_do_not_poison_state(vector: np.ndarray | None) -> None:
    det = Detector()
    for i in range(30):
        det.update(t(i, "user" if i % 2 == 0 else "assistant", v=vector if i % 3 else A))
    raw = det.to_state()
    json.loads(raw)  # allow_nan=False in to_state would have raised on NaN
    assert b"NaN" not in raw and b"Infinity" not in raw
    assert all(math.isfinite(v) for v in det.last_scores.values())


def test_empty_huge_and_repeated_turns() -> None:
    turns = [
        t(i, "user" if i % 2 == 0 else "assistant", text=["", "   ", "y" * 1_000_000][i % 3])
        for i in range(100)
    ]
    segs = segment_stream(turns)
    assert sum(len(s.seqs) for s in segs) == 100
    assert all(len(s.seqs) <= 20 for s in segs)
    det = Detector()
    for turn in turns:
        det.update(turn)
    assert len(det.to_state()) < 200_000  # the judge context is truncated, not the whole text


def test_state_is_versioned_and_bad_state_is_refused() -> None:
    det = Detector()
    for turn in topics(9, 4):
        det.update(turn)
    state = json.loads(det.to_state())
    assert state["version"] == 3
    for bad in [
        b"",
        b"not json",
        b"[]",
        json.dumps({**state, "version": 99}).encode(),
        json.dumps({**state, "signals": {}}).encode(),
    ]:
        with pytest.raises(SegmenterStateError):
            Detector.from_state(bad)
    state["signals"]["change_point"]["kernel"]["log_post"] = [0.0] * 99
    with pytest.raises(SegmenterStateError):
        Detector.from_state(json.dumps(state).encode())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_turns": 0},
        {"semantic_threshold": 2.5},
        {"semantic_threshold": 0.0},
        {"decision_delay": 2},
        {"center_prior_turns": -1.0},
        {"doubt_threshold": 0.7, "cut_threshold": 0.6},
        {"w_semantic": 0.0},
        {"hazard_lambda": 0.5},
    ],
)
def test_config_is_validated(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        DetectorConfig(**kwargs)  # type: ignore[arg-type]


def test_state_arrays_are_exact_and_list_form_still_reads() -> None:
    """Format 3 keeps arrays as base64 float64; format 2 wrote JSON lists."""
    from episodic.segment.base import array_from_json, array_to_json

    x = np.random.default_rng(1).standard_normal((3, 16)) * 1e-7
    packed = array_to_json(x)
    assert json.loads(json.dumps(packed)) == packed
    assert np.array_equal(array_from_json(packed, (3, 16)), x)
    assert np.array_equal(array_from_json(x.tolist(), (3, 16)), x)
    with pytest.raises(ValueError):
        array_from_json(packed, (16, 3))
    with pytest.raises(ValueError):
        array_from_json({**packed, "shape": [4, 16]})


def test_a_peer_dialogue_cuts_before_either_speakers_turn() -> None:
    # the shift opens on the second speaker's turn: user-anchored, it is absorbed
    # into the episode's mean before the next user turn and no cut comes
    assert [s.reason for s in segment_stream(topics(12, 5))] == ["flush"]
    peer = segment_stream(topics(12, 5), DetectorConfig(peer_dialogue=True))
    assert [s.seqs for s in peer] == [tuple(range(5)), tuple(range(5, 12))]
    assert peer[0].reason == "semantic_shift"


def test_a_peer_dialogue_never_cuts_before_a_tool_turn() -> None:
    turns = topics(12, 5)
    turns[5] = t(5, "tool", kind="tool-result", v=B)
    segs = segment_stream(turns, DetectorConfig(peer_dialogue=True))
    assert all(s.seqs[0] != 5 for s in segs)
