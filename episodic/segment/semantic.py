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
        # rows: the query (scratch), the episode's decayed mean, the stream's sum of
        # vectors; one Gram product gives every inner product a distance needs
        self._B: np.ndarray | None = None
        self._has_mean = False
        self._n = 0
        self._distance = 0.0

    @property
    def _mean(self) -> np.ndarray | None:
        return self._B[1] if self._B is not None and self._has_mean else None

    @property
    def _sum(self) -> np.ndarray | None:
        return self._B[2] if self._B is not None and self._n else None

    def _rows(self, x: np.ndarray) -> np.ndarray:
        if self._B is None:
            self._B = np.zeros((3, x.shape[0]))
        elif self._B.shape[1] != x.shape[0]:  # as adding the vectors would have said
            raise ValueError(f"a {x.shape[0]}-dim vector in a stream of {self._B.shape[1]}")
        return self._B

    @property
    def distance(self) -> float:
        """The centred cosine distance of the last scoring, in [0, 2]."""
        return self._distance

    def observe(self, x: np.ndarray | None) -> None:
        """Count `x` into the stream mean (every turn, on arrival)."""
        if x is None:
            return
        self._rows(x)[2] += x
        self._n += 1

    def distance_to(self, q: np.ndarray | None, q2: np.ndarray | None = None) -> float:
        """Centred cosine distance of `q` (or of the mean of `q` and `q2`) to the
        episode's mean; 0 with nothing to compare."""
        B = self._B
        if q is None or B is None or not self._has_mean:
            return 0.0
        if q2 is None:
            B[0] = q
        else:  # the row holds q + q2; halving its products is exact (a power of two)
            np.add(q, q2, out=B[0])
        (qq, qm, qs), (_, mm, ms), (_, _, ss) = B.dot(B.T).tolist()
        if q2 is not None:
            qq, qm, qs = 0.25 * qq, 0.5 * qm, 0.5 * qs
        if self.center and self._n:
            # a = q - mu, b = m - mu with mu = sum / (n + prior), expanded
            k = 1.0 / (self._n + self.prior_turns)
            kk = k * k * ss
            ab = qm - k * (qs + ms) + kk
            aa = qq - 2.0 * k * qs + kk
            bb = mm - 2.0 * k * ms + kk
        else:
            ab, aa, bb = qm, qq, mm
        den = math.sqrt(max(aa, 0.0) * max(bb, 0.0))
        if not den > 1e-12:
            return 0.0
        d = 1.0 - ab / den
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
        B = self._rows(x)
        if not self._has_mean:
            B[1], self._has_mean = x, True
            return
        m = B[1]
        m *= 1.0 - self.decay
        np.multiply(x, self.decay, out=B[0])  # the scratch row: no allocation
        m += B[0]

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
        if x is None:
            self._has_mean = False
        else:
            self._rows(x)[1], self._has_mean = x, True

    def _get(self) -> dict[str, Any]:
        return {
            "mean": None if self._mean is None else array_to_json(self._mean),
            "sum": None if self._sum is None else array_to_json(self._sum),
            "n": self._n,
            "distance": self._distance,
        }

    def _set(self, state: dict[str, Any]) -> None:
        m = state["mean"]
        mean = None if m is None else array_from_json(m)
        s = state.get("sum")  # absent in version-1 detector states
        total = None if s is None else array_from_json(s)
        n = int(state.get("n", 0))
        if n < 0 or (total is None) != (n == 0):
            raise ValueError("stream mean count does not match its sum")
        dims = {a.shape for a in (mean, total) if a is not None}
        if len(dims) > 1 or any(len(d) != 1 for d in dims):
            raise ValueError("episode mean and stream sum differ in shape")
        self._B = None if not dims else np.zeros((3, *next(iter(dims))))
        self._has_mean, self._n = mean is not None, n
        if self._B is not None:
            if mean is not None:
                self._B[1] = mean
            if total is not None:
                self._B[2] = total
        self._distance = finite(state.get("distance", 0.0))
