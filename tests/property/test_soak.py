"""A short run of the stateful soak (episodic/bench/soak.py): two tenants,
hostile and repeated writes, files, consolidation (one in a child process
killed at a persistence point), export and import honest and tampered,
forgetting; after every step the store equals what was acknowledged and
doctor is clean. `episodic soak --minutes N` is the long run."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from episodic.bench.soak import Tally, machine


@pytest.mark.usefixtures("prefect_harness")
def test_soak_short(tmp_path: Path) -> None:
    made = [0]

    def home() -> Path:
        made[0] += 1
        return tmp_path / f"run-{made[0]}"

    tally = Tally()
    run_state_machine_as_test(
        machine(home, tally),
        settings=settings(
            max_examples=2,
            stateful_step_count=12,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
    assert tally.violations == []
    assert tally.steps >= 10 and tally.turns_checked > 0
    # a killed consolidation always has new turns to crash in
    assert tally.kills == tally.kill_attempts, tally.as_dict()
