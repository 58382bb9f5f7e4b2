"""What keeps memory current while a server holds it open (`episodic api`,
`episodic mcp`): the hooks' spool drained every second, and each user's
consolidation run `delay_s` after that user's last write (debounced: a burst
of writes costs one run) but never later than `max_wait_s` after the first
write it has not read (an agent that writes every few seconds for hours has
no pause to wait for), or at once on a flush ("I'm done, remember this
now"). One background thread; a run for one user at a time, so runs never
pile up; a failed run is logged and retried on the next write."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from episodic.service.memory import Memory

log = logging.getLogger("episodic.autopilot")
TICK_S = 1.0


def due_at(first: float, last: float, delay_s: float, max_wait_s: float) -> float:
    """When a user's run is due: `delay_s` after their `last` write, capped at
    `max_wait_s` after the `first` write since their last run (0: no cap)."""
    debounced = last + delay_s
    return min(debounced, first + max_wait_s) if max_wait_s > 0 else debounced


class Autopilot:
    def __init__(
        self, memory: Memory, delay_s: float, max_wait_s: float, *, drain: bool = True
    ) -> None:
        self.memory = memory
        self.delay_s = delay_s
        self.max_wait_s = max_wait_s
        self.drain = drain
        self._due: dict[str, float] = {}  # user -> when to consolidate
        self._first: dict[str, float] = {}  # user -> their first write since their last run
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.runs = 0  # consolidations started (tests and the bench read it)

    def start(self) -> Autopilot:
        self._thread = threading.Thread(target=self._loop, name="episodic-autopilot", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def touch(self, user_id: str) -> None:
        """A write for `user_id`: its consolidation moves to `delay_s` from now,
        within `max_wait_s` of the first write it has not read."""
        now = time.monotonic()
        with self._lock:
            first = self._first.setdefault(user_id, now)
            self._due[user_id] = due_at(first, now, self.delay_s, self.max_wait_s)

    def flush(self, user_id: str) -> dict[str, Any]:
        """Consolidate `user_id` now, closing its open episodes; the run's summary."""
        with self._lock:
            self._due.pop(user_id, None)
            self._first.pop(user_id, None)
        self.runs += 1
        return self.memory.consolidate(user_id, flush=True)

    def _loop(self) -> None:
        while not self._stop.wait(TICK_S):
            if self.drain:
                try:
                    for user_id in self.memory.drain_spool().users:
                        self.touch(user_id)
                except Exception as e:  # the hooks' files are the user's: keep serving
                    log.warning("draining the capture spool failed: %s", e)
            now = time.monotonic()
            with self._lock:
                due = [u for u, t in self._due.items() if t <= now]
                for u in due:
                    del self._due[u]
                    del self._first[u]
            for user_id in due:
                self.runs += 1
                try:
                    self.memory.consolidate(user_id)
                except Exception as e:
                    log.warning("consolidating a user after their writes failed: %s", e)
