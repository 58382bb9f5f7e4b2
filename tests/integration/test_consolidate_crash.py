"""A crash between any two persistence steps of the consolidate flow, then a
rerun, ends exactly where an uninterrupted run ends: the same episodes, the
same salience, the same facts and fact history, the same watermarks.

In-process: EPISODIC_CRASHPOINT=<name>:<nth>:raise makes episodic/crashpoints.py
raise InjectedCrash at the nth hit of a named point, under the Prefect test
harness. A point inside a task with retries may be absorbed by the retry (the
run then succeeds); either way the rerun must converge. The os._exit variant
of the same points runs in child processes in test_reliability_crash.py."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from episodic import crashpoints
from episodic.adapters.embedded import Memory
from episodic.crashpoints import InjectedCrash
from flows.consolidate import consolidate
from tests.integration.crash_support import arm, count_hits, rerun
from tests.integration.facts_support import Say, ingest, memory_for, snapshot
from tests.integration.helpers import TOPICS

pytestmark = pytest.mark.usefixtures("prefect_harness")

USER = "u1"
SETTINGS: dict[str, Any] = {"batch_turns": 7}  # several persist steps per stream

SLOW = pytest.mark.slow
# every named point at its first hit; later hits (partial progress) are slow
POINTS = [
    pytest.param("embed", 1),
    pytest.param("embed", 3, marks=SLOW),
    pytest.param("before_episodes", 1),
    pytest.param("before_episodes", 2, marks=SLOW),
    pytest.param("after_episodes", 1),
    pytest.param("after_episodes", 3, marks=SLOW),
    pytest.param("after_checkpoint", 1),
    pytest.param("after_checkpoint", 4, marks=SLOW),
    pytest.param("after_checkpoint", -1),  # the last one: all episodes closed, none scored
    pytest.param("before_salience_write", 1),
    pytest.param("after_fact_plan", 1, marks=SLOW),
    pytest.param("after_fact_plan", 2),
    pytest.param("after_fact_apply", 1),
    pytest.param("after_fact_apply", 2, marks=SLOW),
]
# points inside segment-streams, a task without retries: the run must fail there
UNRETRIED = {"embed", "before_episodes", "after_episodes", "after_checkpoint"}
FACT_LINES = [
    "I live in Paris.",
    "I have a dog named Rex.",
    "we use Postgres for the billing service.",
    "I moved to Berlin.",
    "Rex died last week.",
    "I prefer tabs over spaces.",
]


def workload() -> list[Say]:
    """Two streams: topics with a time gap between them, fact statements among
    the user turns, so there are many episodes and several fact events."""
    says: list[Say] = []
    facts = iter(FACT_LINES)
    for sid, start in (("s1", datetime(2025, 3, 1, 9, tzinfo=UTC)),
                       ("s2", datetime(2025, 4, 1, 9, tzinfo=UTC))):  # fmt: skip
        t = start
        for k, (topic, words) in enumerate(TOPICS):
            for i in range(5):
                role = "user" if i % 2 == 0 else "assistant"
                text = f"{topic}: {words} step {i}"
                if role == "user" and i == 2:
                    text = f"{next(facts, 'I use Emacs.')} {text}"
                says.append(Say(text, t.isoformat(), role=role, stream=sid))
                t += timedelta(minutes=2)
            if k % 2 == 1:
                t += timedelta(hours=2)  # a time gap cuts for sure
    return says


def _ingest(memory: Memory, source: Path) -> None:
    # turn ids hash the source path: every run ingests the same file
    assert ingest(memory.rt, source, workload()).accepted == len(workload())


@pytest.fixture(scope="module")
def baseline(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict[str, Any], int, Path]]:
    """The uninterrupted run, and how often it passes `after_checkpoint`."""
    tmp = tmp_path_factory.mktemp("baseline")
    with pytest.MonkeyPatch.context() as mp:
        memory = memory_for("offline", tmp / "home", mp, **SETTINGS)
        _ingest(memory, tmp / "turns.jsonl")
        checkpoints = count_hits(memory, mp, USER)
        snap = snapshot(memory.rt, USER)
    yield snap, checkpoints, tmp / "turns.jsonl"


def test_baseline_has_work_for_every_point(baseline: tuple[dict[str, Any], int, Path]) -> None:
    snap, checkpoints, _ = baseline
    assert len(snap["episodes"]) >= 6
    assert checkpoints >= 4
    assert {h[2] for h in snap["history"]} >= {"ADD", "UPDATE", "DELETE"}
    assert all(e[7] is not None and e[10] == "done" for e in snap["episodes"])


@pytest.mark.parametrize(("point", "nth"), POINTS, ids=lambda v: str(v))
def test_crash_then_rerun_equals_uninterrupted(
    point: str,
    nth: int,
    baseline: tuple[dict[str, Any], int, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expected, checkpoints, source = baseline
    nth = checkpoints if nth < 0 else nth
    memory = memory_for("offline", tmp_path / "home", monkeypatch, **SETTINGS)
    rt = memory.rt
    _ingest(memory, source)
    arm(monkeypatch, point, nth)
    crashed = False
    try:
        consolidate(user=USER, flush=True, memory=memory)
    except InjectedCrash:
        crashed = True
    assert crashpoints._hits.get(point, 0) >= nth  # the crash really fired
    assert crashed or point not in UNRETRIED
    if crashed:
        assert snapshot(rt, USER) != expected  # the crash left work undone
    got = rerun(memory, monkeypatch, USER)
    assert got["episodes"] == expected["episodes"]
    assert got["checkpoints"] == expected["checkpoints"]
    assert got["facts"] == expected["facts"]
    assert got["history"] == expected["history"]
    # and a further poll finds nothing left to do
    again = consolidate(user=USER, flush=True, memory=memory)
    assert isinstance(again, dict)
    assert again["turns_processed"] == 0 and again["episodes_closed"] == 0
    assert snapshot(rt, USER) == expected
