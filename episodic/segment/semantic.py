"""Semantic shift: cosine distance of a turn to the episode's decayed running mean."""

from __future__ import annotations

from typing import Any

import numpy as np

from episodic.segment.base import Signal, array_from_json, array_to_json, clip01


class SemanticShift(Signal):
    """Score = 1 - cos(x, m), clipped to [0, 1], where m is the episode's running mean.

    The mean decays toward recent turns (`decay` is the weight of the newest
    vector), so a sustained drift moves the anchor instead of hiding in an
    average over the whole episode. Turns without a vector score 0 and leave the
    mean alone.
    """

    name = "semantic_shift"

    def __init__(self, threshold: float = 0.8, decay: float = 0.7) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError("threshold must be in (0, 1]")
        if not 0.0 < decay <= 1.0:
            raise ValueError("decay must be in (0, 1]")
        self.threshold = threshold
        self.decay = decay
        super().__init__()

    def _params(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "decay": self.decay}

    def _reset(self) -> None:
        self._mean: np.ndarray | None = None

    def update(self, x: np.ndarray | None) -> float:
        """`x`: a unit vector (float64) or None."""
        self._score, self._fired = 0.0, False
        if x is None:
            return 0.0
        m = self._mean
        if m is None:
            self._mean = x.copy()
            return 0.0
        norm = float(np.sqrt(m @ m))
        if norm > 1e-12:
            self._score = clip01(1.0 - float(x @ m) / norm)
            self._fired = self._score >= self.threshold
        m *= 1.0 - self.decay
        m += self.decay * x
        return self._score

    def restart(self, x: np.ndarray | None) -> None:
        """The turn just scored opens a new episode: the mean starts from it."""
        self._mean = None if x is None else x.copy()

    def _get(self) -> dict[str, Any]:
        return {"mean": None if self._mean is None else array_to_json(self._mean)}

    def _set(self, state: dict[str, Any]) -> None:
        m = state["mean"]
        self._mean = None if m is None else array_from_json(m)
