"""Recency decay and reciprocal-rank fusion, the pure scoring pieces the
shipped search and the fact candidates share (episodic/retrieval.py)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from episodic.retrieval import recency, relevance, rrf_scores
from storage.search import fuse

NOW = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)


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


def _ids(rankings: list[list[str]], k: int = 60) -> list[str]:
    return [item_id for item_id, _ in rrf_scores(rankings, k)]


def test_rrf_fuses_by_reciprocal_rank() -> None:
    fused = rrf_scores([["a", "b", "c"], ["b", "c", "d"]], k=60)
    scores = dict(fused)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["d"] == pytest.approx(1 / 63)
    assert _ids([["a", "b", "c"], ["b", "c", "d"]]) == ["b", "c", "a", "d"]


def test_rrf_counts_a_repeat_once_and_breaks_ties_by_id() -> None:
    assert rrf_scores([["x", "x"]]) == [("x", 1 / 61)]
    assert _ids([["b"], ["a"]]) == ["a", "b"]
    assert rrf_scores([]) == []
    with pytest.raises(ValueError):
        rrf_scores([["a"]], k=0)


def test_rrf_ranks_from_one_as_the_fact_candidates_did() -> None:
    """Facts.candidates and the fact mirror summed 1 / (60 + rank + 1) over
    0-based ranks by hand; the one fusion gives the same scores and order."""
    rankings = [["f3", "f1", "f2"], ["f2", "f4"]]
    by_hand: dict[str, float] = {}
    for ranking in rankings:
        for r, fid in enumerate(ranking):
            by_hand[fid] = by_hand.get(fid, 0.0) + 1.0 / (60 + r + 1)
    order = sorted(by_hand, key=lambda f: (-by_hand[f], f))
    fused = rrf_scores(rankings)
    assert [f for f, _ in fused] == order
    assert dict(fused) == by_hand


def test_a_ranking_that_found_nothing_abstains() -> None:
    """No query word in any fact: the cosine ranking alone is on the same
    fixed scale, its first at full relevance, not half."""
    both = dict(fuse(["a"], ["a"]))
    alone = dict(fuse([], ["a", "b"]))
    assert alone["a"] == pytest.approx(both["a"])
    assert relevance(alone["a"]) == pytest.approx(1.0) and relevance(alone["b"]) < 1.0
    assert relevance(dict(fuse(["x"], ["a"]))["a"]) == pytest.approx(0.5)
    assert fuse([], []) == []
