"""The reference loop is seed 000's `Segmentor.observe` as written: append
first, then compare against the mean that includes the new turn; the 15-turn
floor counts the new turn too."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from episodic.bench.reference import naive_loop


class Table:
    """Texts name their vectors: a fixed, known geometry."""

    name = "table"
    dim = 2

    def embed(self, texts: list[str]) -> np.ndarray:
        a, c = np.array([1.0, 0.0]), np.array([0.5, np.sqrt(0.75)])  # cos(a, c) = 0.5
        out = [a if t.endswith("a") else c if t.endswith("c") else (a + c) / 2 for t in texts]
        return np.asarray(out, dtype=np.float32)


def test_the_new_turn_is_in_the_mean_it_is_compared_with(tmp_path: Path) -> None:
    # compared before adding, distance 0.5 > 0.45 would cut; the seed's mean of
    # (a, c) is 0.87-similar to c, so it does not
    out = naive_loop([("u", "user", "a"), ("u", "user", "c")], Table(), tmp_path / "a")
    assert out["episodes"] == 1


def test_the_floor_counts_the_new_turn(tmp_path: Path) -> None:
    # the 15th turn cuts: 14 close, the 15th opens the next segment
    out = naive_loop([("u", "user", "a")] * 15, Table(), tmp_path / "b")
    assert out["episodes"] == 2
