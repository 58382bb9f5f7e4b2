"""What keeps memory current while a server holds it open (`episodic api`,
`episodic mcp`): the hooks' spool drained every second, and each user's
consolidation run `delay_s` after that user's last write (debounced: a burst
of writes costs one run) but never later than `max_wait_s` after the first
write it has not read (an agent that writes every few seconds for hours has
no pause to wait for), or at once on a flush ("I'm done, remember this
now"). A run after writes leaves the conversation's last episode open; one
more run once the user has been idle for `idle_s` closes it (the idle close
needs a poll, and nothing else would come until the user writes again).
One background thread; a run for one user at a time, so runs never
pile up; a failed run is logged and retried on the next write."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from episodic.service.memory import Memory

log = logging.getLogger("episodic.autopilot")
TICK_S = 1.0
# past the idle limit before the follow-up run: the limit counts from when
# LanceDB stored the last turn, a moment after its write was answered
IDLE_MARGIN_S = 5.0


def due_at(first: float, last: float, delay_s: float, max_wait_s: float) -> float:
    """When a user's run is due: `delay_s` after their `last` write, capped at
    `max_wait_s` after the `first` write since their last run (0: no cap)."""
    debounced = last + delay_s
    return min(debounced, first + max_wait_s) if max_wait_s > 0 else debounced


class Autopilot:
    def __init__(
        self,
        memory: Memory,
        delay_s: float,
        max_wait_s: float,
        idle_s: float | None = None,
        *,
        drain: bool = True,
    ) -> None:
        self.memory = memory
        self.delay_s = delay_s
        self.max_wait_s = max_wait_s
        self.idle_s = idle_s  # None: no follow-up run for the idle close
        self.drain = drain
        self._due: dict[str, float] = {}  # user -> when to consolidate
        self._first: dict[str, float] = {}  # user -> their first write since their last run
        self._last: dict[str, float] = {}  # user -> their last write
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.runs = 0  # consolidations started (tests and the bench read it)

    @classmethod
    def configured(cls, memory: Memory) -> Autopilot | None:
        """A server's autopilot, as the memory's settings say (None:
        EPISODIC_AUTO_CONSOLIDATE_S is 0, consolidation only on request)."""
        s = memory.settings
        if s.auto_consolidate_s <= 0:
            return None
        return cls(memory, s.auto_consolidate_s, s.auto_consolidate_max_s, s.idle_minutes * 60)

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
            self._last[user_id] = now
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
                # runs after writes; the others are idle follow-ups
                written = {u for u in due if self._first.pop(u, None) is not None}
                for u in due:
                    del self._due[u]
            for user_id in due:
                self.runs += 1
                try:
                    self.memory.consolidate(user_id)
                except Exception as e:
                    log.warning("consolidating a user after their writes failed: %s", e)
                if user_id in written and self.idle_s is not None:
                    self._follow_up(user_id, self.idle_s)

    def _follow_up(self, user_id: str, idle_s: float) -> None:
        """One more run once the user is idle, unless a write came meanwhile."""
        with self._lock:
            if user_id not in self._due:
                self._due[user_id] = self._last[user_id] + idle_s + IDLE_MARGIN_S
