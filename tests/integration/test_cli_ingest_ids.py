"""`episodic ingest --json` keys turns by the transcript, not by the file's path:
a copy elsewhere adds nothing, a request log that repeats the growing
conversation stores each turn once, identical turns at two positions stay two."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from episodic.adapters.cli.main import app
from episodic.service.runtime import Runtime
from tests.integration.cli_support import cli_home

FIX = Path(__file__).parent.parent / "fixtures" / "ingest"
T0 = datetime(2025, 5, 1, 8, 0, tzinfo=UTC)


def _ingest(path: Path, *args: str) -> dict[str, Any]:
    res = CliRunner().invoke(app, ["ingest", str(path), "--json", *args])
    assert res.exit_code in (0, 1), res.output
    out: dict[str, Any] = json.loads(res.stdout)
    return out


def _write(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _copy(src: Path, dest: Path) -> Path:
    """A copy in another folder with a later mtime, as `cp` without -p gives."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    later = src.stat().st_mtime + 3 * 86_400
    os.utime(dest, (later, later))
    return dest


def _texts(rt: Runtime) -> list[str]:
    return [
        t.text
        for h in rt.raw.streams()
        for t in rt.raw.read(h.user_id, h.stream_id, -1, h.head_seq)
    ]


@pytest.fixture
def rt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    return cli_home(monkeypatch, tmp_path / "home").rt


@pytest.mark.parametrize(
    "name",
    ["claude_code_session.jsonl", "openai_messages.jsonl", "openai_conversations.jsonl",
     "anthropic_messages.json", "generic.jsonl", "locomo_small.json"],
)  # fmt: skip
def test_a_copy_in_another_folder_adds_nothing(rt: Runtime, tmp_path: Path, name: str) -> None:
    first = _ingest(_copy(FIX / name, tmp_path / "a" / name))
    assert first["accepted"] > 0
    rows = rt.raw.count()
    again = _ingest(_copy(FIX / name, tmp_path / "b" / "elsewhere" / name))
    assert again["accepted"] == 0
    assert again["duplicates"] == first["accepted"]
    assert again["streams"] == first["streams"]
    assert rt.raw.count() == rows


def test_a_renamed_claude_code_session_adds_nothing(rt: Runtime, tmp_path: Path) -> None:
    """Its stream is the sessionId and its ids the entries' uuids, not the file name."""
    first = _ingest(_copy(FIX / "claude_code_session.jsonl", tmp_path / "a" / "x.jsonl"))
    again = _ingest(_copy(FIX / "claude_code_session.jsonl", tmp_path / "b" / "backup.jsonl"))
    assert first["streams"] == again["streams"] == ["sess-42"]
    assert again["accepted"] == 0 and again["duplicates"] == first["accepted"]


def _request(n: int) -> dict[str, Any]:
    roles = ("user", "assistant")
    msgs = [{"role": roles[i % 2], "content": f"message {i} of the conversation"} for i in range(n)]
    return {"model": "gpt-4o", "messages": msgs}


def test_openai_request_log_stores_each_turn_once(rt: Runtime, tmp_path: Path) -> None:
    path = _write(tmp_path / "requests.jsonl", [_request(n) for n in (1, 5, 10, 13)])
    rep = _ingest(path, "--format", "openai")
    assert rep["accepted"] == 13 and rep["rejected"] == 0  # was 29: 1 + 5 + 10 + 13
    assert rep["streams"] == ["requests:1"]
    assert rt.raw.count() == 13
    assert _texts(rt) == [f"message {i} of the conversation" for i in range(13)]
    seqs = [t.seq for t in rt.raw.read("default", "requests:1", -1, 100)]
    assert seqs == list(range(13))
    # the log grows by a fifth request: only its new suffix is new
    _write(path, [_request(n) for n in (1, 5, 10, 13, 16)])
    grown = _ingest(path, "--format", "openai")
    assert grown["accepted"] == 3 and grown["duplicates"] == 13
    assert rt.raw.count() == 16
    # and a copy of the grown log elsewhere adds nothing
    assert _ingest(_copy(path, tmp_path / "b" / "requests.jsonl"))["accepted"] == 0


def test_two_identical_turns_in_one_second_are_both_kept(rt: Runtime, tmp_path: Path) -> None:
    row = {"user_id": "u1", "stream_id": "s1", "role": "user", "text": "ok", "ts": T0.isoformat()}
    path = _write(tmp_path / "t.jsonl", [row, row])
    rep = _ingest(path)
    assert rep["accepted"] == 2 and rep["duplicates"] == 0
    turns = rt.raw.read("u1", "s1", -1, 100)
    assert [(t.seq, t.text) for t in turns] == [(0, "ok"), (1, "ok")]
    assert _ingest(_copy(path, tmp_path / "b" / "t.jsonl"))["accepted"] == 0
