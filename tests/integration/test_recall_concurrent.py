"""Concurrent searches count every recall: 4 real processes x 25 searches over
4 reflections, each search returning all 4, started together on one store. The
read-modify-write this replaces moved the counts by 40 instead of 100."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.memory_items import reflection
from tests.integration.reliability_support import ROOT, record, runtime_env, use_home

PROCESSES = 4
SEARCHES = 25
TEXTS = [
    "my dog Rex needs a vet appointment next week for his vaccines",
    "deploy the payment service to the staging cluster with helm",
    "the login endpoint returns 401 after the token refresh",
    "book a table for two at the italian restaurant on friday",
]

WORKER = """
import json, os, sys, time
from pathlib import Path
from episodic.service.memory import Memory

go, n = Path(sys.argv[1]), int(sys.argv[2])
QUERY = " ".join(json.loads(sys.argv[3]))
with Memory() as memory:  # the home the environment names; closing writes the recalls
    memory.search("u1", "warm up", k=4, kinds=("reflections",), record=False)
    (go.parent / f"ready-{os.getpid()}").touch()
    while not go.exists():
        time.sleep(0.01)
    sizes = [
        # every reflection's words: an item must be near the query in cosine
        len(memory.search("u1", f"{QUERY} {i} {os.getpid()}", k=4, kinds=("reflections",)))
        for i in range(n)
    ]
print(json.dumps({"sizes": sizes}))
"""


def test_four_processes_of_searches_count_every_recall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    rt = use_home(monkeypatch, home).rt
    rt.reflections.write([reflection(rt, "u1", t) for t in TEXTS])
    rt.reflections.write([reflection(rt, "u2", TEXTS[0])])  # another user's: never touched
    rt.store.ensure_indexes()
    go = tmp_path / "go"
    env = {**os.environ, **runtime_env(home), "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(go), str(SEARCHES), json.dumps(TEXTS)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    deadline = time.monotonic() + 600
    while len(list(tmp_path.glob("ready-*"))) < PROCESSES:  # imports paid, store open
        assert all(p.poll() is None for p in procs), [p.communicate()[1][-2000:] for p in procs]
        assert time.monotonic() < deadline, "workers never got ready"
        time.sleep(0.05)
    started = time.monotonic()
    go.touch()
    outs = [p.communicate(timeout=800) for p in procs]
    seconds = time.monotonic() - started
    for p, (out, errs) in zip(procs, outs, strict=True):
        assert p.returncode == 0, errs[-2000:]
        assert json.loads(out.splitlines()[-1])["sizes"] == [4] * SEARCHES

    counts = {r.reflection_id: r.recall_count for r in rt.reflections.list("u1")}
    assert list(counts.values()) == [PROCESSES * SEARCHES] * len(TEXTS)
    assert [r.recall_count for r in rt.reflections.list("u2")] == [0]
    record(
        "recall_concurrency",
        processes=PROCESSES,
        searches=PROCESSES * SEARCHES,
        recalls_expected=PROCESSES * SEARCHES * len(TEXTS),
        recalls_counted=sum(counts.values()),
        seconds=round(seconds, 1),
    )
