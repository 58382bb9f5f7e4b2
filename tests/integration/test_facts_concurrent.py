"""Two consolidations of one user at the same time end with the same facts
and history as one after the other: merges of a user are serialised, so no
episode merges against stale candidates.

Two shapes: two threads running the flow (offline, and Anthropic through the
stub), and two OS processes calling `merge_pending` directly on the same
store (the storage-level guarantee, without the flow's lease around it)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from episodic.service.facts import merge_pending
from episodic.service.runtime import Runtime
from episodic.service.salience import score_pending
from episodic.service.segment import poll_stream
from flows.consolidate import consolidate
from tests.integration.facts_support import (
    USER,
    Say,
    ScriptedModel,
    ingest,
    memory_for,
    runtime_for,
    snapshot,
)
from tests.stubs.anthropic_stub import AnthropicStub

pytestmark = pytest.mark.usefixtures("prefect_harness")
ROOT = Path(__file__).resolve().parents[2]

# two streams of one user; the second's facts change the first's
STREAMS = {
    "s1": [
        Say("I live in Paris.", "2025-01-10T09:00:00+00:00", stream="s1"),
        Say("I have a dog named Rex.", "2025-01-10T09:01:00+00:00", stream="s1"),
        Say("I use Emacs.", "2025-01-10T09:02:00+00:00", stream="s1"),
    ],
    "s2": [
        Say("I moved to Berlin.", "2025-03-01T09:00:00+00:00", stream="s2"),
        Say("Rex died last week.", "2025-03-01T09:01:00+00:00", stream="s2"),
        Say("I use Emacs.", "2025-03-01T09:02:00+00:00", stream="s2"),
    ],
}
EXTRACT = {
    "I live in Paris": "User lives in Paris",
    "I moved to Berlin": "User lives in Berlin",
    "I have a dog named Rex": "User has a dog named Rex",
    "Rex died": "User's dog Rex died last week",
    "I use Emacs": "User uses Emacs",
}
RULES = [("Berlin", "UPDATE", "Paris"), ("Rex died", "DELETE", "dog named Rex")]


def _ingest_all(rt: Runtime, tmp: Path) -> None:
    for sid, says in STREAMS.items():
        assert ingest(rt, tmp / f"{sid}.jsonl", says).accepted == len(says)


def _timeless(snap: dict[str, Any]) -> dict[str, Any]:
    # salience may differ in nothing here; facts and history must be equal
    return {k: snap[k] for k in ("facts", "history")}


@pytest.fixture(params=["offline", "anthropic"])
def kind(request: pytest.FixtureRequest) -> Iterator[tuple[str, AnthropicStub | None]]:
    if request.param == "offline":
        yield "offline", None
        return
    model = ScriptedModel(extract=EXTRACT, merge_rules=RULES)
    with AnthropicStub(default=lambda n: model.action(n)) as stub:
        model.stub = stub
        yield "anthropic", stub


def test_two_flow_runs_at_once_equal_one_after_the_other(
    kind: tuple[str, AnthropicStub | None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, stub = kind
    first = memory_for(name, tmp_path / "seq", monkeypatch, stub=stub)
    seq = first.rt
    _ingest_all(seq, tmp_path)
    consolidate(user=USER, flush=True, memory=first)
    consolidate(user=USER, flush=True, memory=first)
    expected = snapshot(seq)
    assert len(expected["facts"]) == 4  # Paris, Berlin, Rex (deleted), Emacs
    # both episodes merged in one run: the history still reads in decision order
    berlin = next(f for f in seq.facts.list(USER) if "Berlin" in f.text)
    assert [h.event for h in seq.facts.history(USER, berlin.fact_id)] == ["ADD", "UPDATE"]

    memory = memory_for(name, tmp_path / "par", monkeypatch, stub=stub)
    rt = memory.rt
    _ingest_all(rt, tmp_path)
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def run() -> None:
        try:
            start.wait()
            consolidate(user=USER, flush=True, memory=memory)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    got = snapshot(rt)
    assert _timeless(got) == _timeless(expected)
    assert [e[:6] for e in got["episodes"]] == [e[:6] for e in expected["episodes"]]
    events = sorted(h[2] for h in got["history"])
    assert events == ["ADD", "ADD", "ADD", "DELETE", "NOOP", "UPDATE"]


# ---- two processes on one store, merge_pending directly -----------------------------

_CHILD = """
import os, sys, time
from pathlib import Path
from episodic.service.facts import merge_pending
from episodic.service.memory import Memory
go = Path(sys.argv[1])
rt = Memory().rt  # the home the environment names
rt.facts.list("u1")  # open the tables before the race starts
rt.episodes.facts_pending("u1")
Path(sys.argv[2]).touch()
while not go.exists():
    time.sleep(0.01)
b = merge_pending(rt, "u1")
print(b.episodes, dict(b.events))
"""


def _prepare(home: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    """Closed, scored episodes whose facts are not merged yet."""
    rt = runtime_for("offline", home, monkeypatch)
    _ingest_all(rt, tmp)
    for h in rt.raw.streams(USER):
        poll_stream(rt, USER, h.stream_id, head_seq=h.head_seq, flush=True)
    ids = [e.episode_id for e in rt.episodes.list(USER)]
    assert len(ids) >= 2
    score_pending(rt, USER, ids)
    return rt


def test_two_processes_merging_one_user_equal_one_merge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seq = _prepare(tmp_path / "seq", tmp_path, monkeypatch)
    n = merge_pending(seq, USER).episodes
    assert n >= 2
    expected = _timeless(snapshot(seq))

    rt = _prepare(tmp_path / "par", tmp_path, monkeypatch)
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(go), str(tmp_path / f"ready-{i}")],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    while not all((tmp_path / f"ready-{i}").exists() for i in range(2)):
        assert all(p.poll() is None for p in procs), "a child died before the race"
        time.sleep(0.05)
    go.touch()
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, errs) in zip(procs, outs, strict=True):
        assert p.returncode == 0, errs[-2000:]
    assert _timeless(snapshot(rt)) == expected
    merged = sorted(int(out.split()[0]) for out, _ in outs)
    assert merged == [0, n]  # the second waited, then found nothing left to merge
    assert all(e.facts_state == "done" for e in rt.episodes.list(USER))
