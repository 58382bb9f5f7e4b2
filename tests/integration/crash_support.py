"""In-process crash points (episodic/crashpoints.py) around the consolidate flow:
count how often a flushing run passes a point, arm a point, and rerun once it
has fired, as a restarted service would."""

from __future__ import annotations

from typing import Any

import pytest

from episodic import crashpoints
from episodic.adapters.embedded import Memory
from flows.consolidate import consolidate
from tests.integration.facts_support import snapshot

CRASH_ENV = "EPISODIC_CRASHPOINT"


def arm(mp: pytest.MonkeyPatch, point: str, nth: int) -> None:
    """Raise InjectedCrash at the nth hit of `point` (0: count, never fire)."""
    crashpoints.reset()
    mp.setenv(CRASH_ENV, f"{point}:{nth}:raise")


def count_hits(
    memory: Memory, mp: pytest.MonkeyPatch, user: str, point: str = "after_checkpoint"
) -> int:
    """How often one flushing run of `user` passes `point`; it runs for real."""
    arm(mp, point, 0)
    consolidate(user=user, flush=True, memory=memory)
    hits = crashpoints._hits.get(point, 0)
    crashpoints.reset()
    return hits


def rerun(memory: Memory, mp: pytest.MonkeyPatch, user: str) -> dict[str, Any]:
    """Disarm and run again with flush; what the store then holds."""
    mp.delenv(CRASH_ENV)
    crashpoints.reset()
    consolidate(user=user, flush=True, memory=memory)
    return snapshot(memory.rt, user)
