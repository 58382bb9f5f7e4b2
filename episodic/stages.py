"""Seconds spent per stage of a consolidation, summed across threads.

One clock per runtime; a flow run reads `since(before)` the way it reads the
provider's usage, so a run reports only its own time."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from episodic.vocab import Stage


class StageClock:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds: dict[Stage, float] = dict.fromkeys(Stage, 0.0)

    def add(self, stage: Stage, seconds: float) -> None:
        with self._lock:
            self._seconds[stage] += seconds

    @contextmanager
    def measure(self, stage: Stage) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add(stage, time.perf_counter() - t0)

    def snapshot(self) -> dict[str, float]:
        with self._lock:
            return {s.value: v for s, v in self._seconds.items()}

    def since(self, before: dict[str, float]) -> dict[str, float]:
        """Seconds per stage since `before` (a `snapshot()`), rounded to ms."""
        now = self.snapshot()
        return {k: round(v - before.get(k, 0.0), 3) for k, v in now.items()}
