"""The judge's allowance: a token bucket per stream, so a model is asked at most
`per_1000_turns` times per 1,000 turns however ambiguous the stream is.

A stream starts with one call's credit (its first doubt can be asked); credit
grows with every turn read, capped at `burst` calls, and an ask spends one.
Out of credit, the detector decides as it would with no judge configured.
The credit is part of the checkpoint, so a replayed stream asks the same turns
(and gets the same cached answers)."""

from __future__ import annotations

from episodic.segment.base import finite


class JudgeBudget:
    def __init__(self, per_1000_turns: float, burst: float) -> None:
        self.rate = per_1000_turns / 1000.0
        self.burst = burst
        self.credit = 1.0 if per_1000_turns > 0 else 0.0  # 0: never ask

    def tick(self) -> None:
        """One turn read."""
        self.credit = min(self.burst, self.credit + self.rate)

    def take(self) -> bool:
        """Spend one call when there is one to spend."""
        if self.credit >= 1.0:
            self.credit -= 1.0
            return True
        return False

    def state(self) -> float:
        return self.credit

    def load(self, credit: object) -> None:
        self.credit = min(self.burst, max(0.0, finite(credit)))
