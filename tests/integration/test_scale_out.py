"""The scale-out path, run: PostgreSQL in a temporary cluster, `prefect server
start` on it, a process work pool, deployments/prefect.yaml deployed, two
`prefect worker start` processes; a multi-user corpus consolidated through
per-user runs, a flow run's process killed with SIGKILL in the middle.
Figures come from bench/scale_out.py's report (the same as `--json`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.scale_out import pg_bin, scale_out

pytestmark = pytest.mark.timeout(900)


def _postgres_available() -> bool:
    try:
        pg_bin("initdb")
        pg_bin("pg_ctl")
    except RuntimeError:
        return False
    try:
        import asyncpg  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _postgres_available(), reason="PostgreSQL binaries or asyncpg missing")
def test_two_workers_on_postgres_survive_a_kill(tmp_path: Path) -> None:
    # the uninterrupted end state comes from an in-process run of each user
    # (rep["reference"]); the workers' pass with a kill is compared with it
    rep = scale_out(
        workers=(2,), users=3, streams=2, turns=24, kill=True, tmp=tmp_path, clean=False
    )
    (killed,) = rep["passes"]
    assert rep["turns"] == 3 * 2 * 24
    assert rep["reference"] == {"lost": 0, "duplicates": 0}
    # the kill landed on a running flow run; Prefect marked it Crashed and the
    # rerun of that user completed
    k = killed["killed"]
    assert k is not None and k["state"] == "CRASHED", killed
    assert k["rerun_state"] == "COMPLETED"
    assert killed["states"] == {"COMPLETED": 3, "CRASHED": 1}
    # the end state equals the uninterrupted run's: nothing lost or doubled
    assert killed["lost"] == 0 and killed["duplicates"] == 0
    assert killed["equals_reference"] is True
    assert rep["overlaps"] == 0 and rep["lost"] == 0 and rep["duplicates"] == 0
