"""The run-length posterior both BOCPD kernels keep (bocpd.py, nig.py).

Slot i is "the run holds the last i + 1 observations"; there are at most as
many slots as `_log_post` holds (mass that would grow past the last folds
into it), the first `_k` are live, and everything is in log space. A kernel
computes each live slot's growth message from its own observation model; the
change-point message under a constant hazard, the fold at the cap and the
normalisation are the same for both, and live here.
"""

from __future__ import annotations

import math

import numpy as np


class RunLengths:
    _k: int  # number of live hypotheses
    _log_post: np.ndarray  # log P(run length = i + 1 | data so far), first `_k` live

    def _hazard(self, hazard_lambda: float) -> None:
        if not hazard_lambda > 1.0:
            raise ValueError("hazard_lambda must be > 1")
        h = 1.0 / hazard_lambda
        self._log_h = math.log(h)
        self._log_1mh = math.log1p(-h)

    @property
    def n_hypotheses(self) -> int:
        return self._k

    @property
    def posterior(self) -> np.ndarray:
        """P(run length = i + 1 | data so far), for the live hypotheses."""
        out: np.ndarray = np.exp(self._log_post[: self._k])
        return out

    def _advance(self, grow: np.ndarray, lp0: float) -> tuple[float, float]:
        """The posterior after one observation, from each live slot's growth
        message `grow` (log, times 1 - H) and `lp0` = log p(y | a new run);
        returns (P(a new run starts here), log p(y | past))."""
        k, cap = self._k, len(self._log_post)
        n = min(k + 1, cap)
        new = self._log_post[:n]  # overwritten in place; the old values are in `grow`
        if k < cap:
            new[1:] = grow
        else:
            new[1:] = grow[: cap - 1]
            new[-1] = np.logaddexp(grow[-2], grow[-1])
        # the old posterior is normalised, so the change-point message is H * p0(y)
        new[0] = lp0 + self._log_h
        top = float(new.max())
        evidence = top + math.log(float(np.exp(new - top).sum()))
        new -= evidence
        self._k = n
        return math.exp(float(new[0])), evidence
