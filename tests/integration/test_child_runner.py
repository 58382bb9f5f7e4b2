"""The API's consolidation runner (episodic/adapters/child_runner.py): the
consolidate flow in a child process of lower priority, on the same store;
a child that dies fails only its own requests, and the next request starts
a new child; nothing the dead child started (its ephemeral Prefect server)
outlives it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from episodic.adapters.child_runner import ChildRunner
from episodic.service.memory import Memory
from storage.frames import frame
from tests.integration.helpers import settings_at


def test_runs_in_a_child_and_survives_its_death(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in {
        "EPISODIC_HOME": str(tmp_path),
        "EPISODIC_EMBEDDER": "hash",
        "EPISODIC_LLM": "offline",
    }.items():
        monkeypatch.setenv(k, v)  # the child builds its Memory from the environment
    memory = Memory(settings_at(tmp_path))
    turns = [
        {"role": "user", "text": "I moved to Lisbon last week.", "ts": "2025-03-01T10:00:00Z"},
        {"role": "assistant", "text": "Noted: Lisbon.", "ts": "2025-03-01T10:00:04Z"},
    ]
    memory.add("u", turns)
    runner = ChildRunner()
    try:
        runner(memory, user_id="u", flush=True, shard=None)
        assert frame(memory.rt.store, "episodes", "u").num_rows == 1  # written by the child
        old = runner._proc.pid
        assert os.getpgid(old) == old  # it leads a process group of its own
        runner._proc.kill()  # the child dies between two requests
        runner._proc.join()
        memory.add("u", [dict(t, text=t["text"] + " Again.") for t in turns])
        runner(memory, user_id="u", flush=True, shard=None)  # a new child answers
        assert frame(memory.rt.store, "episodes", "u").num_rows == 2
        assert _group_ends(old), "a process the killed child started is still running"
    finally:
        runner.close()
        memory.close()


def _group_ends(pgid: int, within_s: float = 30.0) -> bool:
    """Whether process group `pgid` is empty, waiting for the runner's reader
    thread to end it (it does so when it sees the child's pipe close)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False
