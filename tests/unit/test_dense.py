"""The in-memory cosine: float32 rows rank as the exact float64 cosine does."""

from __future__ import annotations

import numpy as np

from episodic.dense import Dense


def test_cosines_match_exact_and_top_is_best_first() -> None:
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(5000, 16))
    d = Dense(16)
    d.extend(rows[:100])
    d.extend(rows[100:])  # appends across a growth
    assert len(d) == len(rows)
    q = rng.normal(size=16)
    exact = rows @ q / (np.linalg.norm(rows, axis=1) * np.linalg.norm(q))
    assert np.max(np.abs(d.cosines(q) - exact)) < 1e-5
    top = d.top(q, 5)
    assert [c for _, c in top] == sorted((c for _, c in top), reverse=True)
    assert {i for i, _ in top} <= set(np.argsort(-exact)[:8].tolist())
    some = np.asarray([0, 7, 9])
    assert {i for i, _ in d.top(q, 2, some)} <= {0, 7, 9}


def test_a_zero_vector_scores_zero() -> None:
    d = Dense(4)
    d.extend(np.zeros((2, 4)))
    assert d.cosines(np.ones(4)).tolist() == [0.0, 0.0]
