"""BOCPD (Adams & MacKay 2007) with a Normal-Inverse-Gamma prior per coordinate and a
Student-t predictive, on a learned whitened projection. Diagonal: coordinates are
independent given the run. Slot i holds "the run holds the last i + 1 observations"
with sufficient statistics S (sum) and Q (sum of squares); run lengths are capped at
`max_run` (mass beyond folds into the last slot). Everything in log space; O(R d).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def _lgamma(a: np.ndarray) -> np.ndarray:
    return np.array([math.lgamma(float(v)) for v in np.ravel(a)]).reshape(np.shape(a))


class NigBocpd:
    """Feed whitened observations with `step`; read `cp` (P(a new run starts here)),
    `log_evidence` (log p(y | past)), `lp0` (log p(y | new run)) and
    `expected_run` (E[run length] before the observation)."""

    def __init__(
        self,
        dims: int,
        max_run: int = 30,
        hazard_lambda: float = 5.0,
        kappa0: float = 1.0,
        alpha0: float = 2.0,
        beta0: float = 0.65,
    ) -> None:
        if dims < 1 or max_run < 2:
            raise ValueError("dims must be >= 1 and max_run >= 2")
        if not hazard_lambda > 1.0:
            raise ValueError("hazard_lambda must be > 1")
        if not (kappa0 > 0 and alpha0 > 0 and beta0 > 0):
            raise ValueError("kappa0, alpha0 and beta0 must be > 0")
        self.dims, self.max_run, self.hazard_lambda = dims, max_run, hazard_lambda
        self.kappa0, self.alpha0, self.beta0 = kappa0, alpha0, beta0
        h = 1.0 / hazard_lambda
        self._log_h, self._log_1mh = math.log(h), math.log1p(-h)
        n = np.arange(1.0, max_run + 1.0)
        k = kappa0 + n
        a = alpha0 + n / 2.0
        self._inv_k = (1.0 / k)[:, None]
        self._ap = a + 0.5
        self._sc = (k / (2.0 * (k + 1.0)))[:, None]
        self._c = dims * (
            _lgamma(a + 0.5) - _lgamma(a) - 0.5 * np.log(2.0 * math.pi * (k + 1.0) / k)
        )
        k0, a0 = kappa0, alpha0
        self._c0 = dims * (
            math.lgamma(a0 + 0.5)
            - math.lgamma(a0)
            - 0.5 * math.log(2.0 * math.pi * (k0 + 1.0) / k0)
            - 0.5 * math.log(beta0)
        )
        self._sc0 = k0 / (2.0 * (k0 + 1.0)) / beta0
        self._ap0 = a0 + 0.5
        self._runs = np.arange(1.0, max_run + 1.0)
        self._reset()

    def _reset(self) -> None:
        self._k = 0
        self._lp = np.zeros(self.max_run)
        self._S = np.zeros((self.max_run, self.dims))
        self._Q = np.zeros((self.max_run, self.dims))
        self.cp = 0.0
        self.log_evidence = 0.0
        self.lp0 = 0.0
        self.expected_run = 0.0  # E[run length] before the last observation

    @property
    def n_hypotheses(self) -> int:
        return self._k

    @property
    def posterior(self) -> np.ndarray:
        out: np.ndarray = np.exp(self._lp[: self._k])
        return out

    def step(self, y: np.ndarray) -> float:
        """Absorb one observation; return P(a new run starts with it)."""
        k, cap = self._k, self.max_run
        yy = y * y
        lp0 = self._c0 - self._ap0 * float(np.log1p(self._sc0 * yy).sum())
        self.lp0 = lp0
        if k == 0:
            self._k = 1
            self._lp[0] = 0.0
            self._S[0], self._Q[0] = y, yy
            self.cp, self.log_evidence, self.expected_run = 1.0, lp0, 0.0
            return 1.0
        S, Q = self._S[:k], self._Q[:k]
        mu = S * self._inv_k[:k]
        beta = self.beta0 + 0.5 * (Q - S * mu)
        d = y - mu
        t = np.log1p(d * d * self._sc[:k] / beta)
        lp = self._c[:k] - 0.5 * np.log(beta).sum(1) - self._ap[:k] * t.sum(1)
        post = np.exp(self._lp[:k])
        self.expected_run = float(post @ self._runs[:k])
        grow = self._lp[:k] + lp + self._log_1mh
        n = k + 1 if k < cap else cap
        new = self._lp[:n]
        if k < cap:
            self._S[1:n] = S[: n - 1] + y  # right side is a copy: no aliasing
            self._Q[1:n] = Q[: n - 1] + yy
            new[1:] = grow
        else:
            self._S[1:] = S[:-1] + y
            self._Q[1:] = Q[:-1] + yy
            last = float(np.logaddexp(grow[-2], grow[-1]))
            new[1:] = grow[: cap - 1]
            new[-1] = last
        new[0] = lp0 + self._log_h
        self._S[0], self._Q[0] = y, yy
        top = float(new.max())
        ev = top + math.log(float(np.exp(new - top).sum()))
        new -= ev
        self._k = n
        self.cp = math.exp(float(new[0]))
        self.log_evidence = ev
        return self.cp

    def state(self) -> dict[str, Any]:
        k = self._k
        return {
            "k": k,
            "lp": self._lp[:k].tolist(),
            "S": self._S[:k].tolist(),
            "Q": self._Q[:k].tolist(),
            "cp": self.cp,
            "log_evidence": self.log_evidence,
            "lp0": self.lp0,
            "expected_run": self.expected_run,
        }

    def load_state(self, st: dict[str, Any]) -> None:
        k = int(st["k"])
        if not 0 <= k <= self.max_run:
            raise ValueError(f"run-length count {k} outside [0, {self.max_run}]")
        self._reset()
        self._k = k
        if k:
            lp = np.asarray(st["lp"], dtype=np.float64).reshape(k)
            if not np.isfinite(lp).all():
                raise ValueError("non-finite run-length posterior")
            self._lp[:k] = lp
            self._S[:k] = np.asarray(st["S"], dtype=np.float64).reshape(k, self.dims)
            self._Q[:k] = np.asarray(st["Q"], dtype=np.float64).reshape(k, self.dims)
        self.cp = float(st["cp"])
        self.log_evidence = float(st["log_evidence"])
        self.lp0 = float(st["lp0"])
        self.expected_run = float(st["expected_run"])
