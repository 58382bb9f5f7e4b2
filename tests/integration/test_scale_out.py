"""The scale-out path, run: PostgreSQL in a temporary cluster, `prefect server
start` on it, a process work pool, deployments/prefect.yaml deployed, two
`prefect worker start` processes; a multi-user corpus consolidated through
per-user runs, flow-run processes and a whole worker killed with SIGKILL in
the middle, and the Prefect server restarted during a pass.
Figures come from episodic/bench/scale_out.py's report (the same as `--json`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from episodic.bench.scale_out import Faults, pg_bin, scale_out

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
def test_two_workers_on_postgres_survive_kills_and_a_server_restart(tmp_path: Path) -> None:
    # the uninterrupted end state comes from an in-process run of each user
    # (rep["reference"]); every pass through the workers is compared with it
    rep = scale_out(
        workers=(2,),
        users=6,  # 3 faults planned: spare runs for a kill that comes too late
        streams=2,
        turns=60,
        faults=Faults(kills=2, worker_kills=1),
        restart=True,
        tmp=tmp_path,
        clean=False,
    )
    faulted, restarted = rep["passes"]
    assert rep["turns"] == 6 * 2 * 60
    assert rep["reference"] == {"lost": 0, "duplicates": 0}
    # two flow-run processes killed (the worker reports them Crashed) and one
    # whole worker killed with its run (the zombie automation marks it
    # Crashed when its heartbeats stop), each while the run held its user's
    # slot, i.e. in the middle of a consolidation; each user's rerun
    # completed. A kill that came after a run's work was done (it still
    # completed) is not counted, and another is made.
    took = [f for f in faulted["faults"] if f["state"] == "CRASHED"]
    assert sorted(f["kind"] for f in took) == ["run", "run", "worker"], faulted
    assert (rep["kills"], rep["worker_kills"]) == (2, 1)
    for f in took:
        assert f["recovered_s"] > 0, f
    assert faulted["states"]["CRASHED"] == 3 and faulted["unfinished"] == 0, faulted
    # the server went away mid-run and came back on the same database: the
    # workers picked the remaining runs up and every user completed
    back = restarted["server_restart"]
    assert back is not None and back["away_s"] > 0, restarted
    # a run made after the restart was found and run by the same workers
    assert back["after_run_state"] == "COMPLETED", back
    # every user completed; a run whose call to the server failed while it
    # was away ended Failed and was run again (each such run says why)
    assert restarted["unfinished"] == 0 and restarted["states"]["COMPLETED"] == 7, restarted
    assert all(r["message"] for r in restarted["not_completed"]), restarted
    # the end state equals the uninterrupted run's: nothing lost or doubled
    for p in (faulted, restarted):
        assert p["lost"] == 0 and p["duplicates"] == 0 and p["equals_reference"] is True, p
    assert rep["overlaps"] == 0 and rep["lost"] == 0 and rep["duplicates"] == 0
