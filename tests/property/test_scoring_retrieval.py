"""Invariants of normalisation, ranking, decay and fusion."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from episodic.decay import DecayPolicy, effective_salience, retention
from episodic.retrieval import Candidate, Weights, min_max, rank, rrf_fuse

NOW = datetime(2024, 6, 1, tzinfo=UTC)
finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@given(st.lists(finite, max_size=50))
def test_min_max_is_in_unit_interval_and_keeps_order(values: list[float]) -> None:
    scaled = min_max(values)
    assert len(scaled) == len(values)
    assert all(0.0 <= v <= 1.0 for v in scaled)
    for i, a in enumerate(values):
        for j, b in enumerate(values):
            if a < b:
                assert scaled[i] <= scaled[j]


candidates = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=10_000),
        st.floats(min_value=0, max_value=10),
        st.floats(min_value=-1, max_value=1),
    ),
    min_size=1,
    max_size=40,
)
weights = st.builds(
    Weights,
    alpha=st.floats(min_value=0.01, max_value=5),
    beta=st.floats(min_value=0.0, max_value=5),
    gamma=st.floats(min_value=0.0, max_value=5),
)


@given(candidates, weights, st.integers(min_value=1, max_value=50))
def test_rank_is_sorted_bounded_and_deterministic(
    rows: list[tuple[float, float, float]], w: Weights, k: int
) -> None:
    items = [
        Candidate(f"id{i:03d}", "fact", "t", imp, sim, NOW - timedelta(hours=h))
        for i, (h, imp, sim) in enumerate(rows)
    ]
    ranked = rank(items, now=NOW, weights=w, k=k)
    assert len(ranked) == min(k, len(items))
    keys = [(-r.score, r.item_id) for r in ranked]
    assert keys == sorted(keys)
    assert all(0.0 <= r.score <= w.alpha + w.beta + w.gamma + 1e-9 for r in ranked)
    assert rank(list(reversed(items)), now=NOW, weights=w, k=k) == ranked


@given(
    st.floats(min_value=0, max_value=1e5),
    st.floats(min_value=0, max_value=1e3),
    st.integers(min_value=0, max_value=1000),
    st.floats(min_value=1, max_value=1e4),
)
def test_retention_falls_with_time_and_rises_with_recalls(
    dt: float, more: float, recalls: int, tau: float
) -> None:
    r = retention(dt, recalls, tau)
    assert 0.0 <= r <= 1.0
    assert retention(dt + more, recalls, tau) <= r
    assert retention(dt, recalls + 1, tau) >= r


@given(
    st.floats(min_value=0, max_value=10),
    st.floats(min_value=0, max_value=1),
    st.integers(min_value=0, max_value=10_000),
)
def test_effective_salience_is_bounded(salience: float, r: float, recalls: int) -> None:
    policy = DecayPolicy()
    e = effective_salience(salience, r, recalls, policy.boost_per_recall, policy.max_boost)
    assert 0.0 <= e <= 10.0
    assert e <= salience * r * (1 + policy.max_boost) + 1e-9


@given(st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=8), max_size=5))
def test_rrf_returns_each_id_once(rankings: list[list[str]]) -> None:
    fused = rrf_fuse(rankings)
    assert len(fused) == len(set(fused))
    assert set(fused) == {x for r in rankings for x in r}
