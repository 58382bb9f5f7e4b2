"""Contract suite over every boundary signal, then each signal's own rule."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from episodic.segment.base import Signal
from episodic.segment.bocpd import ChangePoint, Surprisal
from episodic.segment.semantic import SemanticShift
from episodic.segment.signals import AgentMarker, IdleClose, SizeCap, Structural, TimeGap
from episodic.segment.types import SegTurn

T0 = datetime(2025, 1, 1, tzinfo=UTC)
KINDS = [
    "user-question",
    "assistant-answer",
    "tool-error",
    "user-question",
    "system-event",
    "user-correction",
]


def turn(
    i: int, kind: str = "other", role: str = "user", text: str = "x", minutes: float | None = None
) -> SegTurn:
    ts = T0 + timedelta(minutes=i if minutes is None else minutes)
    return SegTurn(i, f"t{i}", role, kind, text, ts, None)


def unit_vectors(n: int, dim: int = 24, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((3, dim))
    out = []
    for i in range(n):
        v = centres[(i // 7) % 3] + 0.5 * rng.standard_normal(dim)
        out.append(v / np.linalg.norm(v))
    return out


def turn_inputs(n: int) -> list[SegTurn]:
    gaps = [0, 1, 2, 50, 51, 52, 200, 201, 202, 203, 204, 300, 301, 302]
    texts = [
        "hi",
        "<new_subtask> go",
        "done <episode_boundary>",
        "ok",
        "fine",
        "<episode_boundary>",
    ]
    return [
        turn(
            i,
            KINDS[i % len(KINDS)],
            "user" if i % 2 == 0 else "assistant",
            texts[i % len(texts)],
            gaps[i % len(gaps)] + 400 * (i // len(gaps)),
        )
        for i in range(n)
    ]


def nll_inputs(n: int) -> list[float | None]:
    rng = np.random.default_rng(1)
    return [None if i % 9 == 4 else float(-20 + 5 * rng.standard_normal()) for i in range(n)]


# (factory, inputs, how to feed one input)
CASES: dict[str, tuple[Callable[[], Signal], Callable[[int], list[Any]], str]] = {
    "size_cap": (lambda: SizeCap(max_turns=4, max_minutes=100), turn_inputs, "update"),
    "time_gap": (lambda: TimeGap(gap_minutes=30), turn_inputs, "update"),
    "idle": (lambda: IdleClose(idle_minutes=30), turn_inputs, "update"),
    "structural": (Structural, turn_inputs, "update"),
    "agent_marker": (AgentMarker, turn_inputs, "update"),
    "semantic_shift": (
        lambda: SemanticShift(threshold=0.5, decay=0.4),
        lambda n: unit_vectors(n),
        "update",
    ),
    "change_point": (
        lambda: ChangePoint(dims=8, max_run_length=6, hazard_lambda=5.0),
        lambda n: unit_vectors(n),
        "update",
    ),
    "surprisal": (lambda: Surprisal(threshold=1.0, warmup=3), nll_inputs, "update"),
}


def run(sig: Signal, xs: list[Any]) -> list[tuple[float, bool]]:
    out = []
    for x in xs:
        s = sig.update(x)  # type: ignore[attr-defined]
        assert 0.0 <= s <= 1.0
        assert s == sig.score
        out.append((s, sig.boundary_detected))
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_state_round_trip_through_json_continues_identically(name: str) -> None:
    make, inputs, _ = CASES[name]
    xs = inputs(40)
    a = make()
    run(a, xs[:17])
    b = make()
    b.load_state(json.loads(json.dumps(a.state(), allow_nan=False)))
    assert b.state() == a.state()
    assert run(a, xs[17:]) == run(b, xs[17:])


@pytest.mark.parametrize("name", list(CASES))
def test_reset_equals_new(name: str) -> None:
    make, inputs, _ = CASES[name]
    sig = make()
    run(sig, inputs(25))
    sig._reset()
    sig._score, sig._fired = 0.0, False
    assert sig.state() == make().state()
    assert run(sig, inputs(25)) == run(make(), inputs(25))


@pytest.mark.parametrize("name", list(CASES))
def test_same_input_same_output(name: str) -> None:
    make, inputs, _ = CASES[name]
    first = run(make(), inputs(30))
    assert first == run(make(), inputs(30))
    assert any(s > 0 for s, _ in first) or name == "idle"


@pytest.mark.parametrize("name", list(CASES))
def test_bad_state_is_refused(name: str) -> None:
    make, _, _ = CASES[name]
    sig = make()
    state = sig.state()
    state["score"] = float("nan")
    with pytest.raises(ValueError):
        sig.load_state(state)


def test_size_cap_fires_on_turn_count_and_span() -> None:
    cap = SizeCap(max_turns=3, max_minutes=60)
    fired = [cap.update(turn(i)) and cap.boundary_detected for i in range(4)]
    assert fired == [False, False, False, True]
    cap.restart(turn(3))
    cap.update(turn(4, minutes=3 + 61))
    assert cap.boundary_detected


def test_time_gap_fires_only_above_gap() -> None:
    gap = TimeGap(gap_minutes=30)
    gap.update(turn(0, minutes=0))
    gap.update(turn(1, minutes=30))
    assert not gap.boundary_detected and gap.score == 1.0
    gap.update(turn(2, minutes=61))
    assert gap.boundary_detected
    gap.update(turn(3, minutes=10))  # 51 minutes backwards: a gap like any other
    assert gap.boundary_detected and gap.score == 1.0
    gap.update(turn(4, minutes=70))  # back to the present: cuts again
    assert gap.boundary_detected
    gap.update(turn(5, minutes=69.5))  # clock skew of seconds: no gap
    assert not gap.boundary_detected and 0.0 < gap.score < 0.1


def test_idle_close_checks_against_now() -> None:
    idle = IdleClose(idle_minutes=30)
    idle.check(T0.timestamp())
    assert not idle.boundary_detected
    idle.update(turn(0, minutes=0))
    idle.check((T0 + timedelta(minutes=29)).timestamp())
    assert not idle.boundary_detected
    idle.check((T0 + timedelta(minutes=31)).timestamp())
    assert idle.boundary_detected


def test_structural_rules() -> None:
    s = Structural()
    s.update(turn(0, "system-event"))
    assert s.boundary_detected and not s.sub_episode
    s.update(turn(1, "tool-error", "tool"))
    assert not s.boundary_detected
    s.update(turn(2, "user-question"))
    assert s.boundary_detected and s.sub_episode
    s.update(turn(3, "user-correction"))
    assert not s.boundary_detected and s.veto


def test_agent_marker_position_decides_which_side() -> None:
    m = AgentMarker()
    m.update(turn(0, role="assistant", text="<new_subtask> now the tests"))
    assert m.boundary_detected and m.sub_episode
    m.update(turn(1, role="assistant", text="all done <episode_boundary>"))
    assert not m.boundary_detected
    m.update(turn(2, role="user", text="next"))
    assert m.boundary_detected and not m.sub_episode
    m.update(turn(3, role="user", text="<episode_boundary> from a user is not authoritative"))
    assert not m.boundary_detected


def test_semantic_shift_scores_distance_to_running_mean() -> None:
    s = SemanticShift(threshold=0.5, decay=0.5)
    a, b = np.eye(4)[0], np.eye(4)[1]
    assert s.update(a) == 0.0
    assert s.update(a) == pytest.approx(0.0, abs=1e-12)
    assert s.update(b) == pytest.approx(1.0)
    assert s.boundary_detected
    assert s.update(None) == 0.0
    s.restart(b)
    assert s.update(b) == pytest.approx(0.0, abs=1e-12)


def test_change_point_rises_at_a_switch() -> None:
    cp = ChangePoint(dims=16, hazard_lambda=10.0, obs_var=0.3)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 64))
    scores = []
    for i in range(20):
        v = (a if i < 10 else b) + 0.2 * rng.standard_normal(64)
        scores.append(cp.update(v / np.linalg.norm(v)))
    assert scores[10] > 0.9
    assert max(scores[2:10] + scores[12:]) < 0.5


def test_change_point_refuses_a_new_dimension() -> None:
    cp = ChangePoint()
    cp.update(np.eye(8)[0])
    with pytest.raises(ValueError):
        cp.update(np.eye(9)[0])


def test_surprisal_is_a_running_z_score() -> None:
    s = Surprisal(threshold=2.0, warmup=3)
    for v in [-10.0, -10.5, -9.5, -10.0, -10.2, -9.8]:
        s.update(v)
    assert abs(s.z) < 3
    s.update(-40.0)  # 40 nats: far more surprising
    assert s.z > 2.0 and s.boundary_detected and s.score == 1.0


@pytest.mark.parametrize(
    "make",
    [
        lambda: SizeCap(max_turns=0),
        lambda: TimeGap(gap_minutes=0),
        lambda: IdleClose(idle_minutes=-1),
        lambda: SemanticShift(threshold=0),
        lambda: SemanticShift(decay=1.5),
        lambda: ChangePoint(threshold=2),
        lambda: ChangePoint(max_run_length=1),
        lambda: ChangePoint(hazard_lambda=1.0),
        lambda: Surprisal(rate=1.0),
    ],
)
def test_bad_parameters_raise_value_error(make: Callable[[], Signal]) -> None:
    with pytest.raises(ValueError):
        make()
