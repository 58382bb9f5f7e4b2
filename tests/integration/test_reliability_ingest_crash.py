"""Crash safety of ingest and maintain: kill them, run again, ingest more,
consolidate; lose and duplicate nothing.

Each ingest trial copies a store holding a consolidated first file, then
ingests a second file (3 streams, interleaved) in a child process of the fork
server (reliability_support) that dies. The child runs what `episodic ingest`
runs with appends of 100 turns (4 commits for the file, so a kill can land
between batches without a file large enough to make consolidation slow), or
the command line itself where its exit code and message are the point:

- at a named point of an append (`append_before_raw`, `append_after_raw` --
  rows committed, heads not: the stale-head window -- and
  `append_after_heads`), in the first batch or a later one (mid-file);
- by SIGKILL at a random moment, or SIGINT (a terminal's Ctrl-C) sent to
  `episodic ingest`;
- on a full disk: an OSError ENOSPC raised at a named point, and a real tmpfs
  that fills up (skipped where `mount -t tmpfs` is not permitted). Both must
  exit 4 with one line on stderr.

Then the same file is ingested again (every turn a duplicate: the path that
used to return before the head was looked at), a file of new turns after it,
the consolidate flow runs with flush, and `episodic doctor --json` runs.
Checked: every input turn stored once, seqs of each stream unique and
contiguous, every turn in exactly one episode, doctor ok.

Maintain trials kill the maintain flow between its writes (after the decay
write, around a table's compaction) or at a random moment, then rerun it,
ingest and consolidate more, and check the same.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.integration.reliability_support import (
    USERS,
    ChildResult,
    ForkServer,
    check_invariants,
    fact_turns,
    forkserver_for,
    open_repos,
    record,
    write_jsonl,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

STREAMS = (("u1", "s1"), ("u1", "s2"), ("u2", "s1"))
BIG_EPISODES, BIG_TURNS_PER = 10, 12  # 120 turns a stream, 360 in all
BATCH = 100  # 4 appends for the file

# (point, nth append): the first batch, one mid-file, the last one
POINTS = [
    (point, nth)
    for point in ("append_before_raw", "append_after_raw", "append_after_heads")
    for nth in (1, 2, 4)
]
# a second crash while re-ingesting the same file
DOUBLE = [
    ("append_after_raw:2", "append_after_raw:1"),
    # the re-ingest's first batch is all duplicates and commits nothing: 3 appends
    ("append_after_heads:1", "append_after_raw:3"),
]
RANDOM_SIGKILL = 9
RANDOM_SIGINT = 7
# through the command line (one append there: the file is under its batch size)
ENOSPC = [("append_before_raw", 1), ("append_after_raw", 1), ("append_after_heads", 1)]
MAINTAIN_POINTS = [
    ("after_decay", 1),
    ("before_table_upkeep", 3),
    ("after_table_upkeep", 1),
    ("after_table_upkeep", 7),
]
MAINTAIN_RANDOM = 2
# decay measured 60 days after the episodes closed (closed_at is the wall clock)
MAINTAIN = {
    "now": (datetime.now(UTC) + timedelta(days=60)).isoformat(),
    "params": {"tau_hours": 24.0, "floor": 0.5},
}


@dataclass(frozen=True)
class Inputs:
    base: Path
    big: Path
    more: Path
    n_turns: int  # distinct turns in the three files


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    d = tmp_path_factory.mktemp("inputs")
    t_big = datetime(2025, 3, 2, 9, 0, tzinfo=UTC)
    t_more = datetime(2025, 3, 20, 9, 0, tzinfo=UTC)
    base = [t for i, (u, s) in enumerate(STREAMS) for t in fact_turns(u, s, offset=i)]
    per_stream = [
        fact_turns(u, s, episodes=BIG_EPISODES, turns_per=BIG_TURNS_PER, start=t_big, marker="big")
        for u, s in STREAMS
    ]
    # interleaved, so every append batch touches every stream's head
    big = [t for group in zip(*per_stream, strict=True) for t in group]
    more = [
        t
        for u, s in STREAMS
        for t in fact_turns(u, s, episodes=2, start=t_more, marker="more", offset=3)
    ]
    return Inputs(
        write_jsonl(d / "base.jsonl", base),
        write_jsonl(d / "big.jsonl", big),
        write_jsonl(d / "more.jsonl", more),
        len(base) + len(big) + len(more),
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    yield from forkserver_for(tmp_path_factory, "ingest-forks")


def _cli(server: ForkServer, home: Path, *args: str, **job: Any) -> ChildResult:
    (res,) = server.run({"home": home, "job": "cli", "args": list(args), **job})
    return res


def _ingest(server: ForkServer, home: Path, path: Path, **job: Any) -> ChildResult:
    return _cli(server, home, "ingest", str(path), "--json", **job)


def _ingest_batched(server: ForkServer, home: Path, path: Path, **job: Any) -> ChildResult:
    (res,) = server.run({"home": home, "job": "ingest", "path": str(path), "batch": BATCH, **job})
    return res


def _du(path: Path) -> int:
    """Bytes allocated (what fills a tmpfs), not the files' lengths."""
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*"))


@pytest.fixture(scope="module")
def pristine(server: ForkServer, inputs: Inputs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home holding the first file, consolidated: the big ingest then meets
    existing heads and watermarks, as it does in use."""
    home = tmp_path_factory.mktemp("ingest-pristine")
    res = _ingest(server, home, inputs.base)
    assert res.status == 0 and res.summary and res.summary["accepted"] > 0, res.log[-2000:]
    (res,) = server.run({"home": home})
    assert res.status == 0, res.log[-3000:]
    return home


@pytest.fixture(scope="module")
def reference(
    server: ForkServer, pristine: Path, inputs: Inputs, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """An uninterrupted big ingest: its length spreads the random kills, its
    growth sizes the tmpfs, and its end state is the one every trial must reach."""
    home = tmp_path_factory.mktemp("ingest-reference")
    shutil.copytree(pristine / "lancedb", home / "lancedb")
    before = _du(home / "lancedb")
    res = _ingest(server, home, inputs.big)
    assert res.status == 0, res.log[-2000:]
    cli_seconds, growth = res.seconds, _du(home / "lancedb") - before
    _finish(server, home, inputs)
    again = tmp_path_factory.mktemp("ingest-reference-batched")
    shutil.copytree(pristine / "lancedb", again / "lancedb")
    res = _ingest_batched(server, again, inputs.big)
    assert res.status == 0, res.log[-2000:]
    return {
        "seconds": res.seconds,
        "cli_seconds": cli_seconds,
        "growth": growth,
        "size": before,
        "episodes": _episode_spans(home),
    }


def _episode_spans(home: Path) -> dict[str, list[tuple[str, int, int]]]:
    repos = open_repos(home)
    return {
        u: sorted((e.stream_id, e.first_seq, e.last_seq) for e in repos.episodes.list(u))
        for u in USERS
    }


def _trial_home(tmp_path: Path, pristine: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(pristine / "lancedb", home / "lancedb")
    return home


def _after_crash(home: Path) -> dict[str, int]:
    """What the dead writer left, read without repairing anything."""
    from episodic.service.doctor import check_store

    repos = open_repos(home)
    report = check_store(repos)
    kinds = [p.kind for p in report.problems]
    return {
        "stale_heads": len({(p.user_id, p.stream_id) for p in report.problems if p.repairable}),
        "other_problems": sum(1 for k in kinds if not k.startswith("head_")),
        "rows": int(repos.raw.turns.count_rows()),
    }


def _finish(server: ForkServer, home: Path, inputs: Inputs) -> dict[str, Any]:
    """Re-ingest, ingest more, consolidate, doctor; then count what was lost."""
    again = _ingest(server, home, inputs.big)
    assert again.status == 0, again.log[-2000:]
    more = _ingest(server, home, inputs.more)
    assert more.status == 0 and more.summary and more.summary["accepted"] > 0, more.log[-2000:]
    (cons,) = server.run({"home": home})
    assert cons.status == 0, cons.log[-3000:]
    doctor = _cli(server, home, "doctor", "--json")
    repos = open_repos(home)
    seq_tbl = repos.raw.seq_table()
    ids = seq_tbl["turn_id"].to_pylist()
    keys = list(
        zip(
            seq_tbl["user_id"].to_pylist(),
            seq_tbl["stream_id"].to_pylist(),
            seq_tbl["seq"].to_pylist(),
            strict=True,
        )
    )
    out = {
        "turns_lost": inputs.n_turns - len(set(ids)),
        "duplicate_rows": len(ids) - len(set(ids)),
        "duplicate_seqs": len(keys) - len(set(keys)),
        "not_in_one_episode": 0,
        "doctor_ok": bool(doctor.status == 0 and doctor.summary and doctor.summary["ok"]),
        "doctor_problems": len(doctor.summary["problems"]) if doctor.summary else -1,
    }
    for u in USERS:
        check = check_invariants(repos, u)
        out["turns_lost"] += check.lost
        out["not_in_one_episode"] += check.lost + check.doubled + (check.turns - check.covered)
        out["duplicate_rows"] += check.duplicate_rows
    return out


def _assert_clean(final: dict[str, Any]) -> None:
    assert final["turns_lost"] == 0, final
    assert final["duplicate_rows"] == 0 and final["duplicate_seqs"] == 0, final
    assert final["not_in_one_episode"] == 0, final
    assert final["doctor_ok"], final


def _report(
    section: str, kind: str, crash: dict[str, int], final: dict[str, Any], **kw: Any
) -> None:
    record(
        section,
        kind=kind,
        trials=1,
        stale_heads_after_crash=crash["stale_heads"],
        turns_lost=final["turns_lost"],
        duplicate_rows=final["duplicate_rows"],
        duplicate_seqs=final["duplicate_seqs"],
        not_in_one_episode=final["not_in_one_episode"],
        doctor_ok=int(final["doctor_ok"]),
        **kw,
    )


def _one_error_line(log: str) -> str:
    lines = [ln for ln in log.splitlines() if ln.strip()]
    assert "Traceback" not in log, log[-3000:]
    assert len(lines) == 1 and lines[0].startswith("error:"), log[-2000:]
    return lines[0]


@dataclass(frozen=True)
class Trial:
    """One trial on its own copy of a store, and what checking its end needs."""

    server: ForkServer
    inputs: Inputs
    reference: dict[str, Any]  # the uninterrupted run's figures
    home: Path
    # the episodes after _finish, where an uninterrupted run gives them (not
    # for maintain, whose reference stops before the big ingest)
    end_spans: dict[str, list[tuple[str, int, int]]] | None = None

    def ingest(self, **job: Any) -> ChildResult:
        return _ingest(self.server, self.home, self.inputs.big, **job)

    def ingest_batched(self, **job: Any) -> ChildResult:
        return _ingest_batched(self.server, self.home, self.inputs.big, **job)

    def recover(self, section: str, kind: str, crash: dict[str, int], **kw: Any) -> None:
        """Carry on after the crash; the end must be the uninterrupted run's."""
        final = _finish(self.server, self.home, self.inputs)
        _assert_clean(final)
        if self.end_spans is not None:
            assert _episode_spans(self.home) == self.end_spans
        _report(section, kind, crash, final, **kw)


@pytest.fixture
def trial(
    server: ForkServer, pristine: Path, inputs: Inputs, reference: dict[str, Any], tmp_path: Path
) -> Trial:
    home = _trial_home(tmp_path, pristine)
    return Trial(server, inputs, reference, home, end_spans=reference["episodes"])


# ---- ingest ------------------------------------------------------------------


@pytest.mark.parametrize(("point", "nth"), POINTS, ids=[f"{p}-{n}" for p, n in POINTS])
def test_ingest_killed_at_a_named_point(trial: Trial, point: str, nth: int) -> None:
    res = trial.ingest_batched(crash=f"{point}:{nth}")
    assert res.status == 137, f"{point}:{nth} was not reached\n{res.log[-2000:]}"
    crash = _after_crash(trial.home)
    assert crash["other_problems"] == 0, crash
    if point == "append_after_raw":  # the window this suite exists for
        assert crash["stale_heads"] == len(STREAMS), crash
    trial.recover("ingest_crash", f"point:{point}", crash)


@pytest.mark.parametrize(("first", "second"), DOUBLE, ids=["raw2-then-raw1", "heads1-then-raw3"])
def test_ingest_killed_again_while_reingesting(trial: Trial, first: str, second: str) -> None:
    for spec in (first, second):
        res = trial.ingest_batched(crash=spec)
        assert res.status == 137, f"{spec} was not reached\n{res.log[-2000:]}"
    trial.recover("ingest_crash", "double", _after_crash(trial.home))


@pytest.mark.parametrize(
    ("sig", "seed"),
    [("SIGKILL", s) for s in range(RANDOM_SIGKILL)] + [("SIGINT", s) for s in range(RANDOM_SIGINT)],
)
def test_ingest_signalled_at_a_random_time(trial: Trial, sig: str, seed: int) -> None:
    rng = random.Random(f"{sig}{seed}")
    if sig == "SIGKILL":
        res = trial.ingest_batched(kill_after=rng.uniform(0.02, 0.95 * trial.reference["seconds"]))
    else:
        delay = rng.uniform(0.02, 0.95 * trial.reference["cli_seconds"])
        res = trial.ingest(kill_after=delay, kill_signal=sig)
    if res.killed:
        # SIGKILL: -9; Ctrl-C: 130 (or click's "Aborted!", 1)
        assert res.status in ((-9,) if sig == "SIGKILL" else (1, 130)), res.log[-2000:]
    crash = _after_crash(trial.home)
    assert crash["other_problems"] == 0, crash
    kind = sig.lower() if res.killed else f"{sig.lower()}-missed"
    trial.recover("ingest_crash", kind, crash, rows_at_kill=crash["rows"])


@pytest.mark.parametrize(("point", "nth"), ENOSPC, ids=[f"{p}-{n}" for p, n in ENOSPC])
def test_ingest_on_a_full_disk_injected(trial: Trial, point: str, nth: int) -> None:
    res = trial.ingest(crash=f"{point}:{nth}:enospc")
    assert res.status == 4, res.log[-2000:]
    assert "No space left on device" in _one_error_line(res.log)
    trial.recover("ingest_crash", "disk-full", _after_crash(trial.home))


def test_ingest_on_a_full_disk_mid_file(trial: Trial) -> None:
    res = trial.ingest_batched(crash="append_after_raw:3:enospc")
    assert res.status == 1 and "No space left on device" in res.log, res.log[-2000:]
    crash = _after_crash(trial.home)
    assert crash["stale_heads"] == len(STREAMS), crash
    trial.recover("ingest_crash", "disk-full", crash)


@pytest.fixture
def tmpfs(tmp_path: Path, pristine: Path, reference: dict[str, Any]) -> Iterator[Path]:
    """A tmpfs holding a copy of the pristine store, then shrunk to leave room
    for about a quarter of the big ingest."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "small-disk"
    mnt.mkdir()
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        pytest.skip(f"mount -t tmpfs not permitted here: {res.stderr.strip()}")
    try:
        shutil.copytree(pristine / "lancedb", mnt / "home" / "lancedb")
        st = os.statvfs(mnt)
        used = (st.f_blocks - st.f_bfree) * st.f_frsize
        size_kb = (used + reference["growth"] // 4) // 1024 + 1
        subprocess.run(["mount", "-o", f"remount,size={size_kb}k", str(mnt)], check=True)
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_ingest_on_a_real_full_tmpfs(
    server: ForkServer, inputs: Inputs, reference: dict[str, Any], tmpfs: Path
) -> None:
    trial = Trial(server, inputs, reference, tmpfs / "home", end_spans=reference["episodes"])
    res = trial.ingest()
    assert res.status == 4, res.log[-2000:]
    assert "No space left on device" in _one_error_line(res.log)
    crash = _after_crash(trial.home)
    # free space, as an operator would, and carry on
    subprocess.run(["mount", "-o", "remount,size=1g", str(tmpfs)], check=True)
    trial.recover("ingest_crash", "disk-full-tmpfs", crash, rows_at_kill=crash["rows"])


# ---- maintain ------------------------------------------------------------------


@pytest.fixture(scope="module")
def maintain_reference(
    server: ForkServer, pristine: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("maintain-reference")
    shutil.copytree(pristine / "lancedb", home / "lancedb")
    (res,) = server.run({"home": home, "job": "maintain", **MAINTAIN})
    assert res.status == 0 and res.summary, res.log[-3000:]
    assert res.summary["archived"] + res.summary["decayed"] > 0, "maintain must write something"
    return {"seconds": res.seconds, "episodes": _episode_spans(home)}


@pytest.fixture
def maintain_trial(
    server: ForkServer,
    pristine: Path,
    inputs: Inputs,
    maintain_reference: dict[str, Any],
    tmp_path: Path,
) -> Trial:
    return Trial(server, inputs, maintain_reference, _trial_home(tmp_path, pristine))


def _maintain_trial(trial: Trial, kind: str, **job: Any) -> None:
    (first,) = trial.server.run({"home": trial.home, "job": "maintain", **MAINTAIN, **job})
    killed = "crash" in job or first.killed
    if "crash" in job:
        assert first.status == 137, f"{job['crash']} was not reached\n{first.log[-2000:]}"
    crash = _after_crash(trial.home)
    assert crash["stale_heads"] == 0 and crash["other_problems"] == 0, crash
    spans = _episode_spans(trial.home)
    assert spans == trial.reference["episodes"], "maintain never adds or drops episodes"
    (res,) = trial.server.run({"home": trial.home, "job": "maintain", **MAINTAIN})
    assert res.status == 0, res.log[-3000:]
    trial.recover("maintain_crash", kind if killed else f"{kind}-missed", crash)


@pytest.mark.parametrize(
    ("point", "nth"), MAINTAIN_POINTS, ids=[f"{p}-{n}" for p, n in MAINTAIN_POINTS]
)
def test_maintain_killed_at_a_named_point(maintain_trial: Trial, point: str, nth: int) -> None:
    _maintain_trial(maintain_trial, f"point:{point}", crash=f"{point}:{nth}")


@pytest.mark.parametrize("seed", range(MAINTAIN_RANDOM))
def test_maintain_killed_at_a_random_time(maintain_trial: Trial, seed: int) -> None:
    delay = random.Random(seed).uniform(0.3, 0.9 * maintain_trial.reference["seconds"])
    _maintain_trial(maintain_trial, "sigkill", kill_after=delay)
