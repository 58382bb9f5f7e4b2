"""BOCPD (Adams & MacKay 2007) with a Normal-Inverse-Gamma prior per coordinate and a
Student-t predictive, on a learned whitened projection. Diagonal: coordinates are
independent given the run. Slot i holds "the run holds the last i + 1 observations"
with its posterior mean `mu`, scale `beta` and `L` = sum of log(beta) over the
coordinates; run lengths are capped at `max_run` (mass beyond folds into the last
slot). Everything in log space; O(R d).

The update is incremental: the predictive term log1p(k d^2 / (2 beta (k + 1))) is
log(beta') - log(beta), where beta' = beta + k d^2 / (2 (k + 1)) is the slot's
next scale, so one log per coordinate serves both the predictive and the update.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from episodic.segment.runlength import RunLengths


def _lgamma(a: np.ndarray) -> np.ndarray:
    return np.array([math.lgamma(float(v)) for v in np.ravel(a)]).reshape(np.shape(a))


class NigBocpd(RunLengths):
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
        self._hazard(hazard_lambda)
        if not (kappa0 > 0 and alpha0 > 0 and beta0 > 0):
            raise ValueError("kappa0, alpha0 and beta0 must be > 0")
        self.dims, self.max_run, self.hazard_lambda = dims, max_run, hazard_lambda
        self.kappa0, self.alpha0, self.beta0 = kappa0, alpha0, beta0
        n = np.arange(1.0, max_run + 1.0)
        k = kappa0 + n
        a = alpha0 + n / 2.0
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
        self._inv_k1 = (1.0 / (k + 1.0))[:, None]  # the mean's step, k = kappa0 + n
        self._apm = a.copy()  # the coefficient of L in the predictive
        self._inv_k0 = 1.0 / (kappa0 + 1.0)
        self._reset()

    def _reset(self) -> None:
        self._k = 0
        self._log_post = np.zeros(self.max_run)
        self._mu = np.zeros((self.max_run, self.dims))
        self._beta = np.full((self.max_run, self.dims), self.beta0)
        self._L = np.zeros(self.max_run)
        self.cp = 0.0
        self.log_evidence = 0.0
        self.lp0 = 0.0
        self.expected_run = 0.0  # E[run length] before the last observation

    def _open(self, y: np.ndarray, u: np.ndarray, t0: float) -> None:
        """Slot 0: a run that holds y alone (`u` = sc0 * y^2, `t0` = sum log1p(u))."""
        self._mu[0] = y * self._inv_k0
        self._beta[0] = self.beta0 + self.beta0 * u
        self._L[0] = self.dims * math.log(self.beta0) + t0

    def step(self, y: np.ndarray) -> float:
        """Absorb one observation; return P(a new run starts with it)."""
        k = self._k
        u = self._sc0 * (y * y)
        t0 = float(np.log1p(u).sum())
        lp0 = self._c0 - self._ap0 * t0
        self.lp0 = lp0
        if k == 0:
            self._k = 1
            self._log_post[0] = 0.0
            self._open(y, u, t0)
            self.cp, self.log_evidence, self.expected_run = 1.0, lp0, 0.0
            return 1.0
        mu, beta, L = self._mu[:k], self._beta[:k], self._L[:k]
        d = y - mu
        bn = d * d
        bn *= self._sc[:k]
        bn += beta  # each slot's scale after absorbing y
        Ln = np.log(bn).sum(1)
        # Student-t predictive: c - L / 2 - (a + 1/2) (L' - L)
        lp = self._c[:k] + self._apm[:k] * L - self._ap[:k] * Ln
        lpk = self._log_post[:k]
        self.expected_run = float(np.exp(lpk) @ self._runs[:k])
        grow = lpk + lp
        grow += self._log_1mh
        n = min(k + 1, self.max_run)
        d *= self._inv_k1[:k]
        d += mu  # each slot's mean after absorbing y
        m = n - 1  # slots that move up by one (the last folds into the cap at the cap)
        self._mu[1:n] = d[:m]
        self._beta[1:n] = bn[:m]
        self._L[1:n] = Ln[:m]
        self._open(y, u, t0)
        self.cp, self.log_evidence = self._advance(grow, lp0)
        return self.cp

    def state(self) -> dict[str, Any]:
        k = self._k
        return {
            "k": k,
            "lp": self._log_post[:k].tolist(),
            "mu": self._mu[:k].tolist(),
            "beta": self._beta[:k].tolist(),
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
            self._log_post[:k] = lp
            if "mu" in st:
                mu = np.asarray(st["mu"], dtype=np.float64).reshape(k, self.dims)
                beta = np.asarray(st["beta"], dtype=np.float64).reshape(k, self.dims)
            else:  # sums and sums of squares (combiner v1 checkpoints)
                S = np.asarray(st["S"], dtype=np.float64).reshape(k, self.dims)
                Q = np.asarray(st["Q"], dtype=np.float64).reshape(k, self.dims)
                mu = S / (self.kappa0 + np.arange(1.0, k + 1.0))[:, None]
                beta = self.beta0 + 0.5 * (Q - S * mu)
            if not (beta > 0).all():
                raise ValueError("non-positive NIG scale")
            self._mu[:k] = mu
            self._beta[:k] = beta
            self._L[:k] = np.log(beta).sum(1)
        self.cp = float(st["cp"])
        self.log_evidence = float(st["log_evidence"])
        self.lp0 = float(st["lp0"])
        self.expected_run = float(st["expected_run"])
