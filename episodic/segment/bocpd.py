"""Bayesian online change-point detection (Adams & MacKay 2007) over turn embeddings.

Model: within a run, observations y in R^d are iid N(mu, s2 I) with the run's
mean mu ~ N(0, p2 I) (known variances, conjugate), and a run ends at each step
with constant hazard H = 1 / hazard_lambda.

Run-length hypotheses are indexed by how many observations the current run
holds, including the newest: slot i is run length i + 1. Slot i therefore
keeps the sum of the last i + 1 observations as its sufficient statistic, and
the kernel needs no window of past data. Hypotheses are capped at
`max_run_length`: mass that would grow past the cap folds into the last slot
("the run is at least that long; estimate it from its last R observations").

Everything runs in log space on at most R x d numbers per step.
"""

from __future__ import annotations

import hashlib
import math
from functools import lru_cache
from typing import Any

import numpy as np

from episodic.segment.base import (
    Signal,
    array_from_json,
    array_to_json,
    clip01,
    finite,
    positive,
)
from episodic.segment.config import DEFAULTS
from episodic.segment.runlength import RunLengths

LOG_2PI = math.log(2.0 * math.pi)


@lru_cache(maxsize=16)
def projection(dim: int, k: int, seed: int) -> np.ndarray:
    """A fixed (dim, k) matrix of +-1 signs drawn from SHA-256, stable across versions.

    Each projected coordinate of a unit vector has variance about 1.
    """
    need = dim * k
    chunks: list[bytes] = []
    counter = 0
    while len(chunks) * 256 < need:
        chunks.append(hashlib.sha256(f"episodic-bocpd:{seed}:{counter}".encode()).digest())
        counter += 1
    bits = np.unpackbits(np.frombuffer(b"".join(chunks), dtype=np.uint8))[:need]
    out = (bits.astype(np.float64) * 2.0 - 1.0).reshape(dim, k)
    out.flags.writeable = False
    return out


class BocpdKernel(RunLengths):
    """The run-length posterior recursion; feed it projected observations with `step`."""

    def __init__(
        self,
        dims: int = DEFAULTS.bocpd_dims,
        max_run_length: int = DEFAULTS.max_run_length,
        hazard_lambda: float = DEFAULTS.hazard_lambda,
        obs_var: float = DEFAULTS.obs_var,
        prior_var: float = DEFAULTS.prior_var,
    ) -> None:
        if dims < 1:
            raise ValueError("dims must be >= 1")
        if max_run_length < 2:
            raise ValueError("max_run_length must be >= 2")
        self._hazard(hazard_lambda)
        if not (obs_var > 0 and prior_var > 0):
            raise ValueError("obs_var and prior_var must be > 0")
        self.dims = dims
        self.max_run_length = max_run_length
        self.hazard_lambda = hazard_lambda
        self.obs_var = obs_var
        self.prior_var = prior_var
        r = np.arange(1, max_run_length + 1, dtype=np.float64)
        post_prec = 1.0 / prior_var + r / obs_var
        self._coef = (1.0 / obs_var) / post_prec  # posterior mean = coef_r * sum_r
        pv = 1.0 / post_prec + obs_var  # predictive variance per coordinate
        self._ipv = -0.5 / pv
        self._const = -0.5 * dims * np.log(2.0 * np.pi * pv)
        pv0 = prior_var + obs_var
        self._ipv0 = -0.5 / pv0
        self._const0 = -0.5 * dims * math.log(2.0 * math.pi * pv0)
        self._reset()

    def _reset(self) -> None:
        self._k = 0
        self._log_post = np.zeros(self.max_run_length)
        self._sums = np.zeros((self.max_run_length, self.dims))

    def step(self, y: np.ndarray) -> tuple[float, float]:
        """Absorb one observation; return (P(a new run starts here), log p(y | past))."""
        k = self._k
        lp0 = self._const0 + self._ipv0 * float(y @ y)
        if k == 0:
            self._k = 1
            self._log_post[0] = 0.0
            self._sums[0] = y
            return 1.0, lp0
        sums = self._sums[:k]
        diff = sums * self._coef[:k, None]
        diff -= y
        q = np.einsum("ij,ij->i", diff, diff)
        grow = self._log_post[:k] + self._const[:k] + q * self._ipv[:k] + self._log_1mh
        n = min(k + 1, self.max_run_length)
        self._sums[1:n] = sums[: n - 1] + y  # at the cap the oldest slot's sum drops out
        self._sums[0] = y
        return self._advance(grow, lp0)

    def state(self) -> dict[str, Any]:
        return {
            "k": self._k,
            "log_post": array_to_json(self._log_post[: self._k]),
            "sums": array_to_json(self._sums[: self._k]),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        k = int(state["k"])
        if not 0 <= k <= self.max_run_length:
            raise ValueError(f"run-length count {k} outside [0, {self.max_run_length}]")
        log_post = array_from_json(state["log_post"], (k,))
        sums = array_from_json(state["sums"], (k, self.dims) if k else None)
        self._reset()
        self._k = k
        self._log_post[:k] = log_post
        if k:
            self._sums[:k] = sums


class ChangePoint(Signal):
    """BOCPD on a fixed projection of the turn embedding; the score is P(new run | turn).

    After each update `log_evidence` holds log p(turn | past turns), from which
    the Surprisal signal works.
    """

    name = "change_point"

    def __init__(
        self,
        threshold: float = DEFAULTS.cp_threshold,
        dims: int = DEFAULTS.bocpd_dims,
        max_run_length: int = DEFAULTS.max_run_length,
        hazard_lambda: float = DEFAULTS.hazard_lambda,
        obs_var: float = DEFAULTS.obs_var,
        prior_var: float = DEFAULTS.prior_var,
        seed: int = DEFAULTS.seed,
    ) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError("threshold must be in (0, 1]")
        self.threshold = threshold
        self.dims = dims
        self.max_run_length = max_run_length
        self.hazard_lambda = hazard_lambda
        self.obs_var = obs_var
        self.prior_var = prior_var
        self.seed = seed
        self._kernel = BocpdKernel(dims, max_run_length, hazard_lambda, obs_var, prior_var)
        super().__init__()

    def _reset(self) -> None:
        self._kernel._reset()
        self._dim = 0  # input dimension, fixed by the first vector
        self._proj: np.ndarray | None = None
        self._log_evidence: float | None = None

    @property
    def log_evidence(self) -> float | None:
        """log p(last turn | earlier turns), None when the last update had no vector
        or was the first observation."""
        return self._log_evidence

    def update(self, x: np.ndarray | None) -> float:
        self._score, self._fired, self._log_evidence = 0.0, False, None
        if x is None:
            return 0.0
        if self._proj is None:
            self._dim = int(x.shape[0])
            self._proj = projection(self._dim, self.dims, self.seed)
        elif x.shape[0] != self._dim:
            raise ValueError(f"vector of dim {x.shape[0]}, this stream uses {self._dim}")
        first = self._kernel.n_hypotheses == 0
        cp, evidence = self._kernel.step(x @ self._proj)
        if not first:
            self._score = clip01(cp)
            self._fired = self._score >= self.threshold
            self._log_evidence = evidence
        return self._score

    def _get(self) -> dict[str, Any]:
        return {
            "dim": self._dim,
            "kernel": self._kernel.state(),
            "log_evidence": self._log_evidence,
        }

    def _set(self, state: dict[str, Any]) -> None:
        dim = int(state["dim"])
        if dim < 0:
            raise ValueError("negative dim")
        self._kernel.load_state(state["kernel"])
        self._dim = dim
        self._proj = projection(dim, self.dims, self.seed) if dim else None
        ev = state["log_evidence"]
        self._log_evidence = None if ev is None else finite(ev)


class Surprisal(Signal):
    """How surprising a turn is: its negative log predictive, as a running z-score.

    The raw surprisal (nats) scales with the model and the projection, so it is
    standardised by an exponentially weighted mean and variance of the stream's
    own past surprisals. `z` is exposed; the score maps z = threshold to 0.5.
    """

    name = "surprisal"

    def __init__(
        self,
        threshold: float = DEFAULTS.surprisal_threshold,
        rate: float = DEFAULTS.surprisal_rate,
        warmup: int = 5,
    ) -> None:
        self.threshold = positive("threshold", threshold)
        if not 0.0 < rate < 1.0:
            raise ValueError("rate must be in (0, 1)")
        if warmup < 1:
            raise ValueError("warmup must be >= 1")
        self.rate = rate
        self.warmup = warmup
        super().__init__()

    def _reset(self) -> None:
        self._n = 0
        self._mean = 0.0
        self._var = 0.0
        self._z = 0.0

    @property
    def z(self) -> float:
        return self._z

    def update(self, log_evidence: float | None) -> float:
        self._score, self._fired, self._z = 0.0, False, 0.0
        if log_evidence is None:
            return 0.0
        s = -log_evidence
        if self._n == 0:
            self._mean = s
        else:
            if self._n >= self.warmup:
                self._z = (s - self._mean) / math.sqrt(self._var + 1e-6)
                self._score = clip01(0.5 * self._z / self.threshold)
                self._fired = self._z >= self.threshold
            # a slower rate while warming up would keep early noise; use 1/n then
            a = max(self.rate, 1.0 / (self._n + 1))
            d = s - self._mean
            self._mean += a * d
            self._var = (1.0 - a) * (self._var + a * d * d)
        self._n += 1
        return self._score

    def _get(self) -> dict[str, Any]:
        return {"n": self._n, "mean": self._mean, "var": self._var, "z": self._z}

    def _set(self, state: dict[str, Any]) -> None:
        self._n = int(state["n"])
        self._mean = finite(state["mean"])
        self._var = finite(state["var"])
        self._z = finite(state["z"])
        if self._var < 0:
            raise ValueError("negative variance")
