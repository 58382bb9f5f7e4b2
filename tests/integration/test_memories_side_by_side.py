"""Nothing is global: two memories on two homes, used side by side by the
flows in one process (each flow is handed its memory), never see each
other's rows, even for the same user id; importing never touches the
environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from episodic.adapters.embedded import Memory
from flows.consolidate import consolidate
from flows.ingest import ingest
from flows.maintain import maintain
from flows.reflect import reflect
from tests.integration.helpers import make_memory, synthetic_stream, write_jsonl

ROOT = Path(__file__).resolve().parents[2]
USER = "u1"  # the same user id in both homes


def _garden(n: int = 12) -> list[dict[str, Any]]:
    t0 = datetime(2025, 6, 1, 7, 0, tzinfo=UTC)
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "text": f"the garden tomatoes need watering and compost, bed {i}",
            "ts": (t0 + timedelta(minutes=2 * i)).isoformat(),
            "stream_id": "garden",
        }
        for i in range(n)
    ]


def _raw_texts(memory: Memory) -> set[str]:
    rt = memory.rt
    return {
        t.text for h in rt.raw.streams(USER) for t in rt.raw.read(USER, h.stream_id, -1, h.head_seq)
    }


def _turn_ids(memory: Memory) -> set[str]:
    rt = memory.rt
    return {
        t.turn_id
        for h in rt.raw.streams(USER)
        for t in rt.raw.read(USER, h.stream_id, -1, h.head_seq)
    }


def _settings_env() -> dict[str, str]:
    # a native library may set its own allocator variable on first import
    return {k: v for k, v in os.environ.items() if k.startswith(("EPISODIC_", "PREFECT_"))}


@pytest.mark.usefixtures("prefect_harness")
def test_two_memories_in_one_process_never_see_each_others_rows(tmp_path: Path) -> None:
    before = _settings_env()
    a, b = make_memory(tmp_path / "a"), make_memory(tmp_path / "b")
    assert a.rt.store.uri != b.rt.store.uri
    work = synthetic_stream(user=USER, stream="work")
    got = ingest(path=str(write_jsonl(tmp_path / "work.jsonl", work)), memory=a)
    assert got["accepted"] == len(work)
    assert b.add(USER, _garden()).accepted == len(_garden())

    # both consolidations at once, in two threads of this process
    summaries: dict[str, Any] = {}
    errors: list[BaseException] = []

    def run(name: str, memory: Memory) -> None:
        try:
            summaries[name] = consolidate(user=USER, flush=True, memory=memory)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=it) for it in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    assert summaries["a"]["turns_processed"] == len(work)
    assert summaries["b"]["turns_processed"] == len(_garden())
    reflect(user=USER, force=True, memory=a)
    maintain(user=USER, memory=b)

    texts_a, texts_b = _raw_texts(a), _raw_texts(b)
    assert texts_a == {t["text"] for t in work}
    assert texts_b == {t["text"] for t in _garden()}
    for memory, mine in ((a, _turn_ids(a)), (b, _turn_ids(b))):
        eps = memory.rt.episodes.list(USER)
        assert eps and {tid for e in eps for tid in e.turn_ids} == mine
        assert all(
            not r.evidence_episode_ids or set(r.evidence_episode_ids) <= {e.episode_id for e in eps}
            for r in memory.rt.reflections.list(USER)
        )
    assert a.rt.reflections.list(USER) and not b.rt.reflections.list(USER)
    assert {s.stream_id for s in a.status(USER)} == {"work"}
    assert {s.stream_id for s in b.status(USER)} == {"garden"}
    # a search of one home never returns the other's words
    for memory, other in ((a, texts_b), (b, texts_a)):
        for query in ("garden tomatoes watering", "helm staging deploy"):
            hits = memory.search(USER, query, k=20, record=False)
            shown = {h.text for h in hits} | {t.text for h in hits for t in h.turns}
            assert not shown & other
    assert _settings_env() == before  # no flow or memory named a store for the others


def test_importing_the_packages_does_not_change_the_environment() -> None:
    code = (
        "import json, os; before = dict(os.environ);"
        "import episodic.adapters.cli.main, episodic.adapters.cli.serve, flows.consolidate,"
        " flows.ingest, flows.reflect, flows.maintain, tasks.steps, episodic.service.memory,"
        " episodic.adapters.embedded, episodic.bench.corpus, episodic.bench.run, storage.db;"
        "print(json.dumps(sorted(set(os.environ.items()) ^ set(before.items()))))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_LOGGING")}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
