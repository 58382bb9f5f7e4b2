"""Batched digests decide what one-episode digests decide.

On the offline provider, consolidating a user's episodes with one digest
question per batch (`digest_batch.BATCH_MAX_EPISODES` episodes at most) ends
in the same episodes, salience, summaries, facts and fact history as asking
one episode at a time; and it asks fewer questions. A rerun on the same
answer cache asks none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from episodic.service import digest_batch
from episodic.service.facts import merge_pending
from episodic.service.runtime import Runtime
from episodic.service.salience import score_pending
from episodic.service.segment import poll_stream
from tests.integration.facts_support import USER, Say, ingest, runtime_for, snapshot

DAYS = [
    ["I live in Paris.", "I have a dog named Rex.", "I use vim for everything."],
    ["My sister Ana lives in Madrid.", "I work at Acme as a designer."],
    ["I moved to Berlin last month.", "I switched to VS Code."],
    ["Rex passed away last week.", "I still use VS Code."],
    ["I quit my job at Acme.", "My doctor is Dr. Okafor."],
    ["I now prefer tea over coffee.", "I live in Berlin."],
    ["I sold my car.", "I started working at Orbital Labs."],
]


def _says() -> dict[str, list[Say]]:
    return {
        f"s{d}": [
            Say(text, f"2025-0{1 + d // 3}-{10 + d:02d}T09:0{i}:00+00:00", stream=f"s{d}")
            for i, text in enumerate(day)
        ]
        for d, day in enumerate(DAYS)
    }


def _consolidate(home: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    rt = runtime_for("offline", home, monkeypatch)
    for sid, says in _says().items():
        assert ingest(rt, tmp / f"{home.name}-{sid}.jsonl", says).accepted == len(says)
    for h in sorted(rt.raw.streams(USER), key=lambda h: h.stream_id):
        poll_stream(rt, USER, h.stream_id, head_seq=h.head_seq, flush=True)
    ids = [e.episode_id for e in rt.episodes.list(USER)]
    assert len(ids) >= len(DAYS)
    batch = score_pending(rt, USER, ids)
    rt.last_batch = batch  # type: ignore[attr-defined]
    merge_pending(rt, USER)
    return rt


def _state(rt: Runtime) -> dict[str, Any]:
    snap = snapshot(rt)
    return {k: snap[k] for k in ("episodes", "facts", "history")}


def test_batched_end_state_equals_one_episode_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(digest_batch, "BATCH_MAX_EPISODES", 1)
    single = _consolidate(tmp_path / "single", tmp_path, monkeypatch)
    expected = _state(single)
    single_calls = single.last_batch.calls  # type: ignore[attr-defined]

    monkeypatch.setattr(digest_batch, "BATCH_MAX_EPISODES", 8)
    batched = _consolidate(tmp_path / "batched", tmp_path, monkeypatch)
    got = _state(batched)
    batched_calls = batched.last_batch.calls  # type: ignore[attr-defined]

    assert got == expected
    assert expected["facts"], "the scenario states facts"
    assert batched_calls < single_calls
    assert batched.last_batch.batched >= 2  # type: ignore[attr-defined]
