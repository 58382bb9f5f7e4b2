"""Invariants of decay and fusion."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from episodic.decay import DecayPolicy, effective_salience, retention
from episodic.retrieval import rrf_scores


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
    fused = [item_id for item_id, _ in rrf_scores(rankings)]
    assert len(fused) == len(set(fused))
    assert set(fused) == {x for r in rankings for x in r}
