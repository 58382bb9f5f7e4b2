"""Capture notices a transcript rewritten in place (same length or longer)
and refuses what is not a regular file, with one error and no hang (issue 32,
finding 4)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from episodic.errors import IngestError
from episodic.service.capture import capture_file
from storage.frames import frame
from storage.offsets import Offsets
from tests.integration.helpers import make_memory


def _lines(prefix: str, n: int) -> str:
    return "".join(
        json.dumps(
            {"role": "user", "text": f"{prefix} {i}", "ts": 1_700_000_000 + i, "id": f"{prefix}{i}"}
        )
        + "\n"
        for i in range(n)
    )


def test_a_transcript_rewritten_longer_is_read_again(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    rt = memory.rt
    path = tmp_path / "t.jsonl"
    path.write_text(_lines("old", 10), encoding="utf-8")
    first = capture_file(rt.raw, Offsets(rt.store), path, "jsonl", user_id="u")
    assert first.accepted == 10
    path.write_text(_lines("new", 15), encoding="utf-8")  # longer than the stored offset
    second = capture_file(rt.raw, Offsets(rt.store), path, "jsonl", user_id="u")
    assert second.restarted and second.accepted == 15
    texts = set(frame(rt.store, "raw_turns", "u")["text"].to_pylist())
    assert {f"new {i}" for i in range(15)} <= texts
    third = capture_file(rt.raw, Offsets(rt.store), path, "jsonl", user_id="u")
    assert not third.restarted and third.accepted == 0


def test_a_fifo_or_a_directory_is_refused_at_once(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    rt = memory.rt
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for bad in (fifo, tmp_path, Path("a\0b.jsonl")):
        with pytest.raises(IngestError):
            capture_file(rt.raw, Offsets(rt.store), bad, "jsonl", user_id="u")
