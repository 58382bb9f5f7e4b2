"""Crash safety of the consolidate flow: kill it, rerun it, lose and duplicate nothing.

Each trial copies one ingested store, runs the consolidate flow in a child
process that dies at a named crash point (`os._exit(137)`, see
episodic/crashpoints.py) or by SIGKILL at a random moment, checks the crash
invariants on what the dead process left, reruns the flow without a crash and
compares the end state with an uninterrupted run on the same input.

The watermark is a field of the checkpoint row, written in one atomic
`merge_insert` with the open buffer and the detector state, so "between the
checkpoint and the watermark" is not a moment that exists; the points around
it are `after_episodes` (episodes written, checkpoint not) and
`after_checkpoint`.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.reliability_support import (
    SETTINGS,
    TWO_STREAMS,
    USERS,
    ChildResult,
    ForkServer,
    check_invariants,
    fact_turns,
    final_state,
    forkserver_for,
    open_repos,
    record,
    run_in_root,
    runtime_env,
    write_jsonl,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]


# (point, nth hit): every named point, early and late in the run
POINTS = [
    ("embed", 1),
    ("embed", 5),
    ("before_episodes", 1),
    ("before_episodes", 4),
    ("after_episodes", 1),
    ("after_episodes", 6),
    ("after_checkpoint", 1),
    ("after_checkpoint", 9),
    ("before_salience_write", 1),
    ("before_salience_write", 2),
    ("after_fact_plan", 1),
    ("after_fact_plan", 9),
    ("after_fact_apply", 1),
    ("after_fact_apply", 12),
]
RANDOM_KILLS = 6
DOUBLE = [(("after_episodes", 2), ("after_fact_plan", 3)), (("embed", 3), ("after_fact_apply", 2))]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    yield from forkserver_for(tmp_path_factory, "forks")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home whose raw log holds the input and nothing else."""
    from episodic.service.ingest import ingest_file

    home = tmp_path_factory.mktemp("pristine")
    turns = TWO_STREAMS + fact_turns("u2", "s1", episodes=4, offset=5)
    rep = ingest_file(open_repos(home).raw, write_jsonl(home / "in.jsonl", turns), "jsonl")
    assert rep.accepted == len(turns) and rep.rejected == 0
    return home


@pytest.fixture(scope="module")
def reference(server: ForkServer, pristine: Path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    home = tmp_path_factory.mktemp("reference")
    shutil.copytree(pristine / "lancedb", home / "lancedb")
    (res,) = server.run({"home": home, "settings": SETTINGS})
    assert res.status == 0, res.log[-3000:]
    repos = open_repos(home)
    state = {u: final_state(repos, u) for u in USERS}
    for u in USERS:
        check = check_invariants(repos, u)
        assert check.ok and check.lost == 0 and check.covered == check.turns, check
    assert state["u1"]["facts"] and state["u1"]["history"], "the input must produce facts"
    return {"state": state, "seconds": res.seconds}


def _trial_home(tmp_path: Path, pristine: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(pristine / "lancedb", home / "lancedb")
    return home


def _progress(repos: Any) -> str:
    """Where a kill landed, from what it left."""
    eps = sum(len(repos.episodes.list(u)) for u in USERS)
    scored = sum(1 for u in USERS for e in repos.episodes.list(u) if e.salience_source)
    done = sum(1 for u in USERS for e in repos.episodes.list(u) if e.facts_state == "done")
    if eps == 0:
        return "before any episode"
    if scored == 0:
        return "segmenting"
    if done == 0:
        return "scoring"
    return "merging facts" if done < eps else "after facts"


def _after_crash(repos: Any) -> dict[str, int]:
    lost = doubled = dupes = ahead = problems = 0
    for u in USERS:
        c = check_invariants(repos, u)
        lost += c.lost
        doubled += c.doubled
        dupes += c.duplicate_rows
        ahead += c.ahead
        problems += len(c.problems)
    return {"lost": lost, "doubled": doubled, "dupes": dupes, "ahead": ahead, "problems": problems}


def _rerun_and_compare(server: ForkServer, home: Path, reference: dict[str, Any]) -> dict[str, int]:
    (res,) = server.run({"home": home, "settings": SETTINGS})
    assert res.status == 0, res.log[-3000:]
    repos = open_repos(home)
    seen = _after_crash(repos)
    mismatches = 0
    for u in USERS:
        check = check_invariants(repos, u)
        assert check.covered == check.turns, f"{u}: turns above the watermark after a flush"
        got = final_state(repos, u)
        if got != reference["state"][u]:
            mismatches += 1
        assert got == reference["state"][u]
    assert seen["lost"] == 0 and seen["doubled"] == 0 and seen["dupes"] == 0, seen
    return {**seen, "mismatches": mismatches}


def _report(kind: str, crash: dict[str, int], final: dict[str, int], progress: str) -> None:
    record(
        "crash",
        kind=kind,
        trials=1,
        turns_lost=crash["lost"] + final["lost"],
        doubled=crash["doubled"] + final["doubled"],
        duplicate_rows=crash["dupes"] + final["dupes"],
        problems=crash["problems"] + final["problems"],
        ahead_after_crash=crash["ahead"],
        state_mismatches=final["mismatches"],
        progress=progress,
    )


@dataclass(frozen=True)
class Trial:
    """One trial on its own copy of the pristine store."""

    server: ForkServer
    reference: dict[str, Any]
    home: Path

    def run(self, **job: Any) -> ChildResult:
        (res,) = self.server.run({"home": self.home, "settings": SETTINGS, **job})
        return res

    def left(self) -> tuple[dict[str, int], str]:
        """What the dead run left, and where it died; nothing lost or doubled."""
        repos = open_repos(self.home)
        crash = _after_crash(repos)
        assert crash["lost"] == 0 and crash["doubled"] == 0 and crash["dupes"] == 0, crash
        return crash, _progress(repos)

    def rerun(self, kind: str, crash: dict[str, int], progress: str) -> None:
        _report(kind, crash, _rerun_and_compare(self.server, self.home, self.reference), progress)


@pytest.fixture
def trial(server: ForkServer, pristine: Path, reference: dict[str, Any], tmp_path: Path) -> Trial:
    return Trial(server, reference, _trial_home(tmp_path, pristine))


@pytest.mark.parametrize(("point", "nth"), POINTS, ids=[f"{p}-{n}" for p, n in POINTS])
def test_crash_point_then_rerun(trial: Trial, point: str, nth: int) -> None:
    res = trial.run(crash=f"{point}:{nth}")
    assert res.status == 137, f"crash point {point}:{nth} was not reached\n{res.log[-2000:]}"
    crash, progress = trial.left()
    assert crash["problems"] == 0, crash
    trial.rerun(f"point:{point}", crash, progress)


@pytest.mark.parametrize("seed", range(RANDOM_KILLS))
def test_sigkill_at_random_time_then_rerun(trial: Trial, seed: int) -> None:
    # spread over the length of an uninterrupted run (its first ~second is
    # Prefect creating the flow run, when a kill leaves nothing behind)
    res = trial.run(kill_after=random.Random(seed).uniform(0.3, 0.9 * trial.reference["seconds"]))
    crash, progress = trial.left()
    assert crash["problems"] == 0, crash
    if res.killed:
        trial.rerun("sigkill", crash, progress)
    else:
        trial.rerun("sigkill-missed", crash, "finished before the kill")


@pytest.mark.parametrize(
    ("first", "second"), DOUBLE, ids=["episodes-then-plan", "embed-then-apply"]
)
def test_two_crashes_in_a_row(
    trial: Trial, first: tuple[str, int], second: tuple[str, int]
) -> None:
    worst = {"lost": 0, "doubled": 0, "dupes": 0, "ahead": 0, "problems": 0}
    for point, nth in (first, second):
        res = trial.run(crash=f"{point}:{nth}")
        assert res.status == 137, f"{point}:{nth} not reached\n{res.log[-2000:]}"
        seen, _ = trial.left()
        worst = {k: worst[k] + seen[k] for k in worst}
    trial.rerun("double", worst, "two crashes")


def test_cli_process_killed_at_crash_point(trial: Trial) -> None:
    """The same through `episodic consolidate --json --flush` in a fresh interpreter."""
    import prefect.settings

    env = {**os.environ, **runtime_env(trial.home, **SETTINGS)}
    env.update(
        EPISODIC_CRASHPOINT="after_fact_plan:2",
        PREFECT_API_URL=str(prefect.settings.PREFECT_API_URL.value()),
        PREFECT_LOGGING_LEVEL="WARNING",
    )
    exe = Path(sys.executable).with_name("episodic")
    proc = run_in_root([str(exe), "consolidate", "--json", "--flush"], env)
    assert proc.returncode == 137, proc.stderr[-2000:]
    trial.rerun("cli", *trial.left())
