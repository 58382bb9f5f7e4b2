"""The combiner's pieces: NIG BOCPD, online features, the linear model, the detector's
use of them (contributions on every cut, tool call and result kept together)."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from episodic.segment import Detector, DetectorConfig, SegTurn
from episodic.segment.combiner import CombinerParams, LinearModel, StreamNorm, packaged
from episodic.segment.features import NAMES, BoundaryFeatures
from episodic.segment.nig import NigBocpd

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def unit(seed: str, dim: int = 384) -> np.ndarray:
    rng = np.random.default_rng(
        int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "little")
    )
    v = rng.normal(size=dim)
    return (v / np.linalg.norm(v)).astype(np.float32)


def topic_stream(n_topics: int = 4, per: int = 6) -> list[SegTurn]:
    out: list[SegTurn] = []
    for k in range(n_topics):
        base = unit(f"topic{k}")
        for j in range(per):
            i = len(out)
            v = base + 0.25 * unit(f"noise{i}")
            role = "user" if j % 2 == 0 else "assistant"
            text = f"topic {k} turn {j} about subject{k} item{j}"
            out.append(
                SegTurn(
                    i,
                    f"t{i}",
                    role,
                    "user-question" if role == "user" else "assistant-answer",
                    text,
                    T0 + timedelta(minutes=i),
                    v / np.linalg.norm(v),
                )
            )
    return out


def test_nig_posterior_is_a_distribution_and_jumps_at_a_change() -> None:
    k = NigBocpd(4, max_run=10, hazard_lambda=5.0)
    rng = np.random.default_rng(0)
    cps = []
    for t in range(30):
        y = rng.normal(size=4) * 0.3 + (0.0 if t < 15 else 4.0)
        cps.append(k.step(y))
        post = k.posterior
        assert math.isclose(float(post.sum()), 1.0, rel_tol=1e-9)
        assert len(post) <= 10
    assert cps[15] > 0.5 > max(cps[5:15])


def test_nig_matches_the_closed_form_for_one_run() -> None:
    """With a hazard near zero the evidence is the NIG marginal likelihood of one run."""
    k = NigBocpd(1, max_run=50, hazard_lambda=1e12, kappa0=1.0, alpha0=2.0, beta0=0.65)
    ys = np.array([0.3, -0.2, 0.5, 0.1])
    total = 0.0
    for y in ys:
        k.step(np.array([y]))
        total += k.log_evidence
    n, m = len(ys), ys.mean()
    kn, an = 1.0 + n, 2.0 + n / 2
    bn = 0.65 + 0.5 * ((ys - m) ** 2).sum() + 1.0 * n * m * m / (2 * kn)
    closed = (
        math.lgamma(an) - math.lgamma(2.0) + 2.0 * math.log(0.65) - an * math.log(bn)
        + 0.5 * math.log(1.0 / kn) - n / 2 * math.log(2 * math.pi)
    )  # fmt: skip
    assert math.isclose(total, closed, rel_tol=1e-6)


def test_features_round_trip_through_state() -> None:
    params = packaged()
    a, b = params.features(), params.features()
    turns = topic_stream()
    rows_a, rows_b = [], []
    for i, t in enumerate(turns):
        z = params.project(np.asarray(t.vector, dtype=np.float64))
        rows_a.append(a.update(z, t.role, t.text, t.seq))
        if i == 9:
            b = params.features()
            b.load_state(a.state())
        if i >= 9:
            rows_b.append(rows_a[-1] if i == 9 else b.update(z, t.role, t.text, t.seq))
    assert rows_a[9:] == rows_b
    assert set(rows_a[-1] or {}) == set(NAMES)


def test_packaged_parameters_are_small_and_complete() -> None:
    params = packaged()
    assert params.comps.shape == (64, 384)
    assert params.version == "2"
    for name in ("stream", "stream_alone", "fitted_adaptive", "fitted_sem4", "full"):
        m = params.models[name]
        if m.mode == "fixed":
            assert 0.0 < m.threshold < 1.0
        else:
            assert math.isfinite(m.threshold) and m.norm() is not None
    shipped = params.models[DetectorConfig().combiner_model]
    # the shipped model: the stream-adaptive score, in an ensemble with the semantic rule
    assert shipped.mode == "z" and (shipped.adapt or {}).get("rule") is True
    # no model shipped by default reads question marks (the SuperDialseg shortcut)
    assert not {"q", "q_prev", "q_next"} & set(shipped.features)


def test_stream_norm_judges_a_candidate_by_the_history_before_it() -> None:
    n = StreamNorm(0.0, 1.0, 2.0, 0.05)
    assert n.z(2.0) == pytest.approx(2.0 / math.sqrt(1.0 + 1e-9))
    for _ in range(200):  # a stream whose scores sit higher: its own scale takes over
        n.push(3.0)
    assert n.m == pytest.approx(3.0, abs=1e-3) and n.z(3.0) == pytest.approx(0.0, abs=1.0)
    m = StreamNorm(0.0, 1.0, 2.0, 0.05)
    m.load(n.state())
    assert m.state() == n.state()


def test_the_detector_decides_as_the_trainer_does() -> None:
    """Same rows, same history, same comparisons: the trainer's table is the detector's."""
    from episodic.bench.datasets import Dialogue
    from episodic.bench.segment_train import Table, decide, feature_rows, logits

    params = packaged()
    model = params.models["stream_alone"]
    turns = topic_stream(6, 6)
    d = Dialogue("x", tuple(t.text for t in turns), tuple(t.role for t in turns), (len(turns),))
    vecs = np.stack([np.asarray(t.vector) for t in turns])
    rows = feature_rows(params, d, vecs)
    expect = decide(logits(model, Table([d], [rows]))[0], d.roles, model.threshold, model.norm())
    det = Detector(DetectorConfig(combiner_model="stream_alone", max_turns=20))
    got = {s.seqs[-1] + 1 for t in turns for s in det.update(t)}
    got |= {s.seqs[-1] + 1 for s in det.flush()}
    assert expect and expect == got - {len(turns)}


def test_contributions_add_up_to_the_probability() -> None:
    params = packaged()
    fe = params.features()
    row = None
    for t in topic_stream():
        row = (
            fe.update(params.project(np.asarray(t.vector, dtype=np.float64)), t.role, t.text) or row
        )
    assert row is not None
    m = params.models["full"]
    p, parts = m.score(row)
    assert math.isclose(m.logit(row), sum(parts.values()) + m.intercept, rel_tol=1e-12)
    logit = sum(parts.values()) + m.intercept
    assert math.isclose(p, 1.0 / (1.0 + math.exp(-logit)), rel_tol=1e-12)


def test_every_combiner_cut_records_its_probability_threshold_and_contributions() -> None:
    det = Detector(DetectorConfig(combiner_threshold=0.05))
    segs = []
    for t in topic_stream():
        segs.extend(det.update(t))
    segs.extend(det.flush())
    soft = [s for s in segs if s.reason == "combiner"]
    assert soft, [s.reason for s in segs]
    full = packaged().models[DetectorConfig().combiner_model]
    for s in soft:
        sc = s.signal_scores
        assert sc["combiner"] >= sc["combiner_threshold"] == 0.05
        assert {f"c_{f}" for f in full.features} <= set(sc)


def test_size_cap_never_separates_a_tool_call_from_its_result() -> None:
    det = Detector(DetectorConfig(max_turns=4))
    kinds = [("user", "user-question"), ("assistant", "assistant-answer"),
             ("assistant", "tool-call"), ("assistant", "tool-call"), ("tool", "tool-success"),
             ("assistant", "tool-call"), ("tool", "tool-success"), ("assistant", "tool-call"),
             ("tool", "tool-error"), ("assistant", "assistant-answer")] * 3  # fmt: skip
    turns = [
        SegTurn(i, f"t{i}", r, k, f"{k} {i}", T0 + timedelta(seconds=10 * i), unit("same"))
        for i, (r, k) in enumerate(kinds)
    ]
    segs = []
    for t in turns:
        segs.extend(det.update(t))
    segs.extend(det.flush())
    assert any(s.reason == "size_cap" for s in segs)
    for s in segs[1:]:
        first = turns[s.seqs[0]]
        before = turns[s.seqs[0] - 1]
        assert not (first.role == "tool" and before.kind == "tool-call"), s.seqs


def test_seed_rule_and_bad_names_are_handled() -> None:
    assert Detector(DetectorConfig(combiner_model="seed_dual")).combiner_threshold == 0.5
    with pytest.raises(ValueError, match="no combiner model"):
        Detector(DetectorConfig(combiner_model="nope"))
    # one turn late or not at all: without the delay the semantic rule decides
    assert Detector(replace(DetectorConfig(), decision_delay=0))._feat is None


def test_parameters_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = packaged()
    p.save(tmp_path / "c.npz")
    q = CombinerParams.load(tmp_path / "c.npz")
    assert np.array_equal(p.comps, q.comps) and q.models.keys() == p.models.keys()
    assert BoundaryFeatures(64, q.boc_scale).boc_dims == 16


def test_skipping_unwanted_rows_leaves_every_later_row_unchanged() -> None:
    params = packaged()
    a, b = params.features(), params.features()
    for i, t in enumerate(topic_stream()):
        z = params.project(np.asarray(t.vector, dtype=np.float64))
        ra = a.update(z, t.role, t.text, t.seq)
        rb = b.update(z, t.role, t.text, t.seq, want=i % 3 == 0)
        if i % 3 == 0:  # equal up to the order of float operations
            assert ra is None or rb == pytest.approx(ra, rel=1e-12, abs=1e-12)
    assert b.state()["d4"] == pytest.approx(a.state()["d4"], rel=1e-12)


def test_default_detector_restored_at_every_turn_equals_one_pass() -> None:
    """The stream's score history (`norm`) is in the checkpoint: restoring after
    every turn cuts exactly where one pass does, with the shipped model."""
    turns = topic_stream(6, 6)
    whole = Detector(DetectorConfig())
    expected = [s for t in turns for s in whole.update(t)] + whole.flush()
    got, state = [], Detector(DetectorConfig()).to_state()
    for t in turns:
        det = Detector.from_state(state)
        got.extend(det.update(t))
        state = det.to_state()
        assert json.loads(state)["norm"] is not None
    got.extend(Detector.from_state(state).flush())
    assert got == expected
    assert any(s.reason in ("combiner", "semantic_shift") for s in expected)


def test_the_one_feature_row_equals_the_full_rows_value() -> None:
    """The shipped model reads `dp_ema5` alone; its fast row gives the value the
    full row gives, on every candidate, and the detector cuts the same."""
    params = packaged()
    narrow = params.features(params.models["stream"].features)
    assert narrow.pair_ema5_only
    full = params.features()
    assert not full.pair_ema5_only
    turns = topic_stream(8, 7)
    rows = 0
    for t in turns:
        z = params.project(np.asarray(t.vector, dtype=np.float64))
        rn, rf = narrow.update(z, t.role, t.text, t.seq), full.update(z, t.role, t.text, t.seq)
        assert (rn is None) == (rf is None)
        if rn is not None and rf is not None:
            assert rn == {"dp_ema5": pytest.approx(rf["dp_ema5"], rel=1e-12, abs=1e-12)}
            rows += 1
    last_n, last_f = narrow.finish(), full.finish()
    assert last_n is not None and last_f is not None
    assert last_n["dp_ema5"] == pytest.approx(last_f["dp_ema5"], rel=1e-12, abs=1e-12)
    assert rows == len(turns) - 1

    def cuts(det: Detector) -> list[tuple[int, ...]]:
        return [s.seqs for t in turns for s in det.update(t)] + [s.seqs for s in det.flush()]

    fast, slow = Detector(DetectorConfig()), Detector(DetectorConfig())
    slow._feat = full.__class__(
        full.dims, full.boc_scale, n0=full.n0, bocpd=False, lexical=False
    )  # the full row, on the same (no BOCPD, no lexical) stream
    got = cuts(fast)
    assert len(got) >= 4 and got == cuts(slow)


def test_a_gate_of_zero_leaves_the_ensemble_to_the_rule(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The adaptive member cuts only where the rule's distance is within `gate` of
    its threshold: at 0 it may add nothing, so the ensemble cuts as the rule does;
    with a wide gate it adds cuts of its own."""
    p = packaged()
    m = p.models["stream"]

    def with_gate(gate: float) -> Detector:
        adapt = dict(m.adapt or {}) | {"gate": gate}
        model = LinearModel(m.features, m.mean, m.scale, m.coef, m.intercept, 0.0, adapt)
        q = CombinerParams(p.version, p.mean, p.comps, p.boc_scale, p.hyper, {"g": model}, {})
        path = tmp_path / f"g{gate}.npz"
        q.save(path)
        return Detector(DetectorConfig(combiner_path=str(path), combiner_model="g"))

    def cuts(det: Detector) -> list[tuple[int, ...]]:
        turns = topic_stream(8, 7)
        return [s.seqs for t in turns for s in det.update(t)] + [s.seqs for s in det.flush()]

    rule = cuts(Detector(DetectorConfig(combiner=False)))
    assert cuts(with_gate(0.0)) == rule
    assert len(cuts(with_gate(2.0))) > len(rule)  # z >= 0 alone cuts more often
