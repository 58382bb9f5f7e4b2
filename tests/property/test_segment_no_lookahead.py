"""The decision for turn t never depends on turns after t + decision_delay.

Two streams share their first t + 1 + delay turns and differ afterwards (any
vectors, roles, texts, times). The cuts the detector places before turns <= t
must be the same in both, including with the combiner voting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from episodic.segment import Detector, DetectorConfig, SegTurn

T0 = datetime(2025, 1, 1, tzinfo=UTC)
ROLES = ("user", "assistant", "tool")


def vec(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=384)
    return (v / np.linalg.norm(v)).astype(np.float32)


def turns(spec: list[tuple[int, int, int, int]], start: int = 0) -> list[SegTurn]:
    out = []
    for i, (topic, role, gap, word) in enumerate(spec, start):
        r = ROLES[role]
        kind = {"user": "user-question", "assistant": "assistant-answer", "tool": "tool-success"}[r]
        v = vec(topic) + 0.3 * vec(10_000 + i)
        out.append(
            SegTurn(i, f"t{i}", r, kind, f"w{word} topic{topic} {'?' if word % 2 else ''}",
                    T0 + timedelta(minutes=i + gap), v / np.linalg.norm(v))
        )  # fmt: skip
    return out


def cuts(ts: list[SegTurn], config: DetectorConfig) -> set[int]:
    det = Detector(config)
    out = set()
    for t in ts:
        for s in det.update(t):
            out.add(s.seqs[-1] + 1)
    return out


spec_turn = st.tuples(
    st.integers(0, 3), st.integers(0, 2), st.sampled_from([0, 0, 0, 45]), st.integers(0, 5)
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    prefix=st.lists(spec_turn, min_size=2, max_size=30),
    tail_a=st.lists(spec_turn, min_size=0, max_size=8),
    tail_b=st.lists(spec_turn, min_size=0, max_size=8),
    threshold=st.sampled_from([0.0, 0.05, 0.3]),
    combiner=st.booleans(),
)
def test_decision_for_t_ignores_turns_after_t_plus_delay(
    prefix: list[tuple[int, int, int, int]],
    tail_a: list[tuple[int, int, int, int]],
    tail_b: list[tuple[int, int, int, int]],
    threshold: float,
    combiner: bool,
) -> None:
    config = DetectorConfig(combiner=combiner, combiner_threshold=threshold, max_turns=6)
    delay = config.decision_delay
    a = cuts(turns(prefix + tail_a), config)
    b = cuts(turns(prefix + tail_b), config)
    t = len(prefix) - 1 - delay  # the prefix holds turns 0 .. t + delay
    assert {c for c in a if c <= t} == {c for c in b if c <= t}
    # and the decision is final by then: the prefix alone already placed those cuts
    alone = cuts(turns(prefix), config)
    assert {c for c in a if c <= t} == {c for c in alone if c <= t}
