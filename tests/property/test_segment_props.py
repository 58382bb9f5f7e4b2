"""Invariants of the BOCPD kernel and the detector, checked with hypothesis."""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Literal

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from episodic.segment import segment_stream
from episodic.segment.bocpd import BocpdKernel
from episodic.segment.detector import Detector, DetectorConfig
from episodic.segment.types import JudgeAnswer, JudgeRequest, SegTurn
from episodic.vocab import ROLES, TURN_KINDS

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def seg_log_marginal(y: np.ndarray, obs_var: float, prior_var: float) -> float:
    """log p(y_1..y_n) of one run, straight from the joint Gaussian (no recursion)."""
    n, d = y.shape
    cov = obs_var * np.eye(n) + prior_var * np.ones((n, n))
    _, logdet = np.linalg.slogdet(cov)
    quad = sum(float(y[:, j] @ np.linalg.solve(cov, y[:, j])) for j in range(d))
    return float(-0.5 * (d * (n * math.log(2 * math.pi) + logdet) + quad))


def brute_force(
    y: np.ndarray, hazard: float, obs_var: float, prior_var: float
) -> tuple[np.ndarray, float]:
    """Posterior over the last run length (1..t) and log p(y), by enumerating partitions."""
    t = y.shape[0]
    logs = np.full(t, -np.inf)
    for mask in itertools.product([0, 1], repeat=t - 1):
        starts = [0] + [i + 1 for i, m in enumerate(mask) if m]
        lp = sum(math.log(hazard) if m else math.log1p(-hazard) for m in mask)
        bounds = [*starts, t]
        lp += sum(
            seg_log_marginal(y[a:b], obs_var, prior_var)
            for a, b in zip(bounds, bounds[1:], strict=False)
        )
        r = t - starts[-1]
        logs[r - 1] = np.logaddexp(logs[r - 1], lp)
    total = float(np.logaddexp.reduce(logs))
    return np.exp(logs - total), total


@settings(max_examples=30, deadline=None)
@given(
    t=st.integers(1, 7),
    d=st.integers(1, 3),
    seed=st.integers(0, 10_000),
    lam=st.floats(1.5, 20),
    obs_var=st.floats(0.1, 2.0),
    prior_var=st.floats(0.1, 3.0),
)
def test_kernel_matches_brute_force(
    t: int, d: int, seed: int, lam: float, obs_var: float, prior_var: float
) -> None:
    y = np.random.default_rng(seed).standard_normal((t, d)) * 1.5
    k = BocpdKernel(
        dims=d, max_run_length=10, hazard_lambda=lam, obs_var=obs_var, prior_var=prior_var
    )
    total = 0.0
    for row in y:
        _, ev = k.step(row)
        total += ev
    post, ref_total = brute_force(y, 1.0 / lam, obs_var, prior_var)
    # slot i of the kernel is run length i + 1, as in the reference
    np.testing.assert_allclose(k.posterior, post, rtol=1e-7, atol=1e-10)
    assert math.isclose(total, ref_total, rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    data=st.lists(st.lists(st.floats(-1e3, 1e3), min_size=4, max_size=4), min_size=1, max_size=80),
    cap=st.integers(2, 12),
)
def test_posterior_sums_to_one_and_has_no_nan(data: list[list[float]], cap: int) -> None:
    k = BocpdKernel(dims=4, max_run_length=cap, hazard_lambda=5.0)
    for row in data:
        cp, ev = k.step(np.asarray(row))
        post = k.posterior
        assert np.isfinite(post).all() and math.isfinite(ev) and 0.0 <= cp <= 1.0
        assert len(post) <= cap
        assert math.isclose(float(post.sum()), 1.0, rel_tol=1e-9)


@st.composite
def streams(draw: st.DrawFn) -> list[SegTurn]:
    n = draw(st.integers(1, 60))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((4, 16))
    minutes = 0.0
    turns = []
    topic = 0
    for i in range(n):
        if rng.random() < 0.12:
            topic = int(rng.integers(4))
        kind_roll = rng.random()
        role = ROLES[0] if kind_roll < 0.45 else ROLES[int(rng.integers(1, 4))]
        kind = (
            TURN_KINDS[int(rng.integers(len(TURN_KINDS)))]
            if rng.random() < 0.3
            else ("user-question" if role == "user" else "assistant-answer")
        )
        text = [
            "question",
            "",
            "   ",
            "answer <episode_boundary>",
            "<new_subtask> step",
            "x" * 5000,
        ][int(rng.integers(6))]
        # out-of-order event times too: clock skew (-2 min), a turn 3 days late
        steps, odds = [0.5, 1.0, 3.0, 45.0, -2.0, -4320.0], [0.38, 0.38, 0.14, 0.05, 0.03, 0.02]
        minutes += float(rng.choice(steps, p=odds))
        v: np.ndarray | None = (centres[topic] + 0.4 * rng.standard_normal(16)).astype(np.float32)
        roll = rng.random()
        if roll < 0.05:
            v = None
        elif roll < 0.08:
            v = np.zeros(16, dtype=np.float32)
        elif roll < 0.1:
            assert v is not None
            v[3] = np.nan
        elif v is not None:
            v /= np.linalg.norm(v)
        turns.append(SegTurn(i, f"t{i}", role, kind, text, T0 + timedelta(minutes=minutes), v))
    return turns


CONFIG = DetectorConfig(
    max_turns=8,
    semantic_threshold=0.5,
    w_change_point=0.5,
    w_surprisal=0.5,
    doubt_threshold=0.3,
    cut_threshold=0.6,
    max_run_length=10,
    user_anchored=False,
)


def judge(req: JudgeRequest) -> JudgeAnswer:
    h = hashlib.sha256(
        (req.summary + "|" + req.turn_text + "|" + "|".join(req.recent_texts)).encode()
    ).digest()[0]
    decisions: tuple[Literal["continue", "new", "sub-episode"], ...] = (
        "continue",
        "new",
        "sub-episode",
    )
    return JudgeAnswer(decision=decisions[h % 3], summary=f"summary {h}")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=streams(),
    cuts=st.lists(st.integers(0, 60), max_size=6),
    with_judge=st.booleans(),
    delay=st.sampled_from([0, 1]),
    anchor=st.sampled_from(["any", "user", "peer"]),
)
def test_one_pass_equals_chunks_with_checkpoint_restore(
    turns: list[SegTurn], cuts: list[int], with_judge: bool, delay: int, anchor: str
) -> None:
    j = judge if with_judge else None
    # any turn; user turns only (an agent's stream); either speaker's (a peer dialogue)
    config = replace(
        CONFIG, decision_delay=delay, user_anchored=anchor != "any", peer_dialogue=anchor == "peer"
    )
    whole = Detector(config, j)
    expected = [seg for t in turns for seg in whole.update(t)]
    bounds = sorted({0, len(turns), *(c for c in cuts if c < len(turns))})
    got = []
    state = Detector(config, j).to_state()
    for a, b in zip(bounds, bounds[1:], strict=False):
        det = Detector.from_state(state, j)
        for t in turns[a:b]:
            got.extend(det.update(t))
        state = det.to_state()
    assert got == expected
    assert state == whole.to_state()
    final = Detector.from_state(state, j)
    assert final.flush() == whole.flush()


@settings(max_examples=40, deadline=None)
@given(turns=streams(), with_judge=st.booleans(), delay=st.sampled_from([0, 1]))
def test_boundaries_strictly_increase_and_partition_the_stream(
    turns: list[SegTurn], with_judge: bool, delay: int
) -> None:
    config = replace(CONFIG, decision_delay=delay)
    segs = segment_stream(turns, config, judge if with_judge else None)
    seqs = [s for seg in segs for s in seg.seqs]
    assert seqs == [t.seq for t in turns]
    firsts = [seg.seqs[0] for seg in segs]
    assert all(a < b for a, b in zip(firsts, firsts[1:], strict=False))
    by_seq = {t.seq: t for t in turns}
    for seg in segs:
        assert 0.0 <= seg.score <= 1.0
        assert seg.started_at <= seg.ended_at
        assert all(math.isfinite(v) for v in seg.signal_scores.values())
        assert all(math.isfinite(v) for v in seg.centroid)
        if len(seg.seqs) > CONFIG.max_turns:
            # the cap never separates a tool call from its result: it fires one turn later
            last, before = by_seq[seg.seqs[-1]], by_seq[seg.seqs[-2]]
            assert len(seg.seqs) == CONFIG.max_turns + 1, len(seg.seqs)
            assert last.role == "tool" and before.kind == "tool-call", (before, last)
