"""Semantic shift: centred cosine distance of a turn to the episode's decayed running mean."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from episodic.segment.base import Signal, array_from_json, array_to_json, clip01, finite
from episodic.segment.config import DEFAULTS


class SemanticShift(Signal):
    """Distance = 1 - cos(x - mu, m - mu), in [0, 2]; the score maps `threshold` to 0.5.

    `m` is the episode's running mean, decayed toward recent turns (`decay` is
    the weight of the newest vector), so a sustained drift moves the anchor
    instead of hiding in an average over the whole episode.

    `mu` is the stream's own running mean of every vector seen so far, shrunk
    toward zero by `prior_turns` pseudo-turns (mu = sum / (n + prior_turns)).
    Sentence embeddings share a large common direction, which squeezes every
    cosine toward 1; removing it spreads topic distances apart (on DialSeg711
    and TIAGE it beat raw cosine, docs/segmentation.md). The shrinkage keeps the
    first turns of a stream, whose mean is mostly the topic itself, close to
    raw cosine. `center=False` gives raw cosine. Turns without a vector score 0
    and leave both means alone.

    The detector drives the parts separately (`observe`, `distance`, `absorb`,
    `restart`) so that it can score a user turn together with its reply;
    `update` is the plain one-turn path.
    """

    name = "semantic_shift"

    def __init__(
        self,
        threshold: float = DEFAULTS.semantic_threshold,
        decay: float = DEFAULTS.semantic_decay,
        center: bool = DEFAULTS.center,
        prior_turns: float = DEFAULTS.center_prior_turns,
    ) -> None:
        if not 0.0 < threshold <= 2.0:
            raise ValueError("threshold must be in (0, 2]")
        if not 0.0 < decay <= 1.0:
            raise ValueError("decay must be in (0, 1]")
        if not (prior_turns >= 0.0 and math.isfinite(prior_turns)):
            raise ValueError("prior_turns must be >= 0 and finite")
        self.threshold = threshold
        self.decay = decay
        self.center = center
        self.prior_turns = prior_turns
        super().__init__()

    def _reset(self) -> None:
        self._mean: np.ndarray | None = None  # the episode's decayed mean
        self._sum: np.ndarray | None = None  # the stream's sum of vectors
        self._n = 0
        self._distance = 0.0

    @property
    def distance(self) -> float:
        """The centred cosine distance of the last scoring, in [0, 2]."""
        return self._distance

    def observe(self, x: np.ndarray | None) -> None:
        """Count `x` into the stream mean (every turn, on arrival)."""
        if x is None:
            return
        if self._sum is None:
            self._sum = x.copy()
        else:
            self._sum += x
        self._n += 1

    def distance_to(self, q: np.ndarray | None) -> float:
        """Centred cosine distance of `q` to the episode's mean; 0 with nothing to compare."""
        m = self._mean
        if q is None or m is None:
            return 0.0
        if self.center and self._sum is not None:
            mu = self._sum / (self._n + self.prior_turns)
            a, b = q - mu, m - mu
        else:
            a, b = q, m
        den = math.sqrt(float(a @ a) * float(b @ b))
        if not den > 1e-12:
            return 0.0
        d = 1.0 - float(a @ b) / den
        return 2.0 if d > 2.0 else (d if d > 0.0 else 0.0)

    def score_distance(self, d: float) -> float:
        """Set and return the score for a distance: `threshold` maps to 0.5."""
        self._distance = d
        self._score = clip01(0.5 * d / self.threshold)
        self._fired = d >= self.threshold
        return self._score

    def absorb(self, x: np.ndarray | None) -> None:
        """Fold `x` into the episode's decayed mean (the turn joins the episode)."""
        if x is None:
            return
        if self._mean is None:
            self._mean = x.copy()
            return
        self._mean *= 1.0 - self.decay
        self._mean += self.decay * x

    def update(self, x: np.ndarray | None) -> float:
        """`x`: a unit vector (float64) or None. Observe, score, absorb."""
        self._score, self._fired, self._distance = 0.0, False, 0.0
        if x is None:
            return 0.0
        self.observe(x)
        self.score_distance(self.distance_to(x))
        self.absorb(x)
        return self._score

    def restart(self, x: np.ndarray | None) -> None:
        """`x` opens a new episode: the episode mean starts from it (the stream mean stays)."""
        self._mean = None if x is None else x.copy()

    def _get(self) -> dict[str, Any]:
        return {
            "mean": None if self._mean is None else array_to_json(self._mean),
            "sum": None if self._sum is None else array_to_json(self._sum),
            "n": self._n,
            "distance": self._distance,
        }

    def _set(self, state: dict[str, Any]) -> None:
        m = state["mean"]
        self._mean = None if m is None else array_from_json(m)
        s = state.get("sum")  # absent in version-1 detector states
        self._sum = None if s is None else array_from_json(s)
        self._n = int(state.get("n", 0))
        if self._n < 0 or (self._sum is None) != (self._n == 0):
            raise ValueError("stream mean count does not match its sum")
        self._distance = finite(state.get("distance", 0.0))
