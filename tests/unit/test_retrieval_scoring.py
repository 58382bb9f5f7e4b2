"""alpha * recency + beta * importance + gamma * similarity, normalised over candidates."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from episodic.retrieval import Candidate, Weights, min_max, rank, recency, rrf_fuse, rrf_scores

NOW = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)


def cand(
    item_id: str, *, hours: float = 0.0, importance: float = 5.0, sim: float = 0.5
) -> Candidate:
    return Candidate(
        item_id, "episode", f"text {item_id}", importance, sim, NOW - timedelta(hours=hours)
    )


def test_recency_is_one_when_just_accessed_and_halves_per_half_life() -> None:
    assert recency(NOW, NOW, 24.0) == 1.0
    assert recency(NOW - timedelta(hours=24), NOW, 24.0) == pytest.approx(0.5)
    assert recency(NOW - timedelta(hours=48), NOW, 24.0) == pytest.approx(0.25)


def test_recency_decreases_with_time_since_access_not_rank() -> None:
    values = [recency(NOW - timedelta(hours=h), NOW, 24.0) for h in (0, 1, 5, 30, 300)]
    assert values == sorted(values, reverse=True)
    assert len(set(values)) == len(values)


def test_recency_of_a_future_access_is_one_and_naive_is_utc() -> None:
    assert recency(NOW + timedelta(hours=3), NOW, 24.0) == 1.0
    naive = (NOW - timedelta(hours=24)).replace(tzinfo=None)
    assert recency(naive, NOW, 24.0) == pytest.approx(0.5)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_recency_needs_positive_half_life(bad: float) -> None:
    with pytest.raises(ValueError):
        recency(NOW, NOW, bad)


def test_min_max_scales_to_unit_interval() -> None:
    assert min_max([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
    assert min_max([-1.0, 1.0]) == [0.0, 1.0]
    assert min_max([]) == []


def test_min_max_of_equal_values_is_all_ones_without_nan() -> None:
    assert min_max([7.0, 7.0, 7.0]) == [1.0, 1.0, 1.0]
    assert min_max([0.0]) == [1.0]
    assert not any(math.isnan(v) for v in min_max([1e-300, 1e-300]))


def test_min_max_refuses_non_finite() -> None:
    with pytest.raises(ValueError):
        min_max([1.0, math.nan])
    with pytest.raises(ValueError):
        min_max([1.0, math.inf])


def test_weights_validate() -> None:
    assert Weights() == Weights(alpha=1.0, beta=1.0, gamma=1.0)
    with pytest.raises(ValidationError):
        Weights(alpha=-0.1)
    with pytest.raises(ValidationError):
        Weights(alpha=0.0, beta=0.0, gamma=0.0)
    with pytest.raises(ValidationError):
        Weights(gamma=math.nan)


def test_candidate_validates() -> None:
    with pytest.raises(ValueError):
        cand("a", sim=math.nan)
    with pytest.raises(ValueError):
        Candidate("", "fact", "t", 1.0, 1.0, NOW)


def test_rank_combines_normalised_components() -> None:
    items = [
        cand("old", hours=48, importance=2.0, sim=0.9),
        cand("new", hours=0, importance=8.0, sim=0.1),
        cand("mid", hours=24, importance=5.0, sim=0.5),
    ]
    ranked = rank(items, now=NOW, weights=Weights(), k=3)
    by_id = {r.item_id: r for r in ranked}
    assert by_id["new"].recency == 1.0 and by_id["old"].recency == 0.0
    assert by_id["new"].importance == 1.0 and by_id["old"].importance == 0.0
    assert by_id["old"].similarity == 1.0 and by_id["new"].similarity == 0.0
    assert by_id["mid"].raw_recency == pytest.approx(0.5)
    assert by_id["mid"].hours_since_access == pytest.approx(24.0)
    for r in ranked:
        assert r.score == pytest.approx(r.recency + r.importance + r.similarity)
    assert [r.item_id for r in ranked] == ["new", "mid", "old"]
    assert set(ranked[0].as_dict()) >= {"score", "recency", "importance", "similarity"}


def test_weights_steer_the_ranking() -> None:
    items = [cand("recent", hours=0, sim=0.1), cand("similar", hours=100, sim=0.9)]
    assert rank(items, now=NOW, weights=Weights(alpha=0.0), k=1)[0].item_id == "similar"
    assert rank(items, now=NOW, weights=Weights(gamma=0.0), k=1)[0].item_id == "recent"


def test_rank_ties_break_by_item_id_and_k_truncates() -> None:
    items = [cand(i) for i in ("c", "a", "b", "d")]
    ranked = rank(items, now=NOW, weights=Weights(), k=3)
    assert [r.item_id for r in ranked] == ["a", "b", "c"]
    assert all(r.score == 3.0 for r in ranked)  # equal components normalise to 1.0


def test_rank_edge_cases() -> None:
    assert rank([], now=NOW, weights=Weights(), k=5) == []
    with pytest.raises(ValueError, match="k"):
        rank([cand("a")], now=NOW, weights=Weights(), k=0)
    with pytest.raises(ValueError, match="duplicate"):
        rank([cand("a"), cand("a")], now=NOW, weights=Weights(), k=2)


def test_rrf_fuses_by_reciprocal_rank() -> None:
    fused = rrf_scores([["a", "b", "c"], ["b", "c", "d"]], k=60)
    scores = dict(fused)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["d"] == pytest.approx(1 / 63)
    assert rrf_fuse([["a", "b", "c"], ["b", "c", "d"]]) == ["b", "c", "a", "d"]


def test_rrf_counts_a_repeat_once_and_breaks_ties_by_id() -> None:
    assert rrf_scores([["x", "x"]]) == [("x", 1 / 61)]
    assert rrf_fuse([["b"], ["a"]]) == ["a", "b"]
    assert rrf_fuse([]) == []
    with pytest.raises(ValueError):
        rrf_fuse([["a"]], k=0)


def test_min_max_survives_an_overflowing_span() -> None:
    assert min_max([-1e308, 0.0, 1e308]) == [0.0, 0.5, 1.0]


def test_candidate_kind_is_checked() -> None:
    with pytest.raises(ValueError, match="kind"):
        Candidate("a", "turn", "t", 1.0, 1.0, NOW)  # type: ignore[arg-type]
