"""`episodic capture`: run as the Claude Code hook would, twice, on a file
that grows (with a half-written last line), with the offset lost; and the
generic JSONL capture of a growing file. Figures come from --json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.api_support import run_cli

pytestmark = pytest.mark.slow
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ingest" / "claude_code_session.jsonl"


def _hook(home: Path, transcript: Path) -> dict[str, Any]:
    hook = {
        "session_id": "sess-42",
        "transcript_path": str(transcript),
        "hook_event_name": "Stop",
        "cwd": "/repo",
    }
    out = run_cli(home, "capture", "claude-code", "--json", stdin=json.dumps(hook))
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def _raw(home: Path) -> list[dict[str, Any]]:
    from storage.db import Store

    return list(Store(str(home / "lancedb")).table("raw_turns").to_arrow().to_pylist())


def _forget_offsets(home: Path) -> None:
    from storage.db import Store
    from storage.offsets import Offsets

    Offsets(Store(str(home / "lancedb"))).table.delete("true")


def _entry(uuid: str, text: str, *, sidechain: bool = False, **extra: Any) -> str:
    e = {
        "type": "user",
        "sessionId": "sess-42",
        "isSidechain": sidechain,
        "uuid": uuid,
        "timestamp": "2025-06-01T11:00:00.000Z",
        "message": {"role": "user", "content": text},
        **extra,
    }
    return json.dumps(e)


def test_claude_code_hook_twice_growing_and_lost_offset(tmp_path: Path) -> None:
    home = tmp_path / "home"
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    transcript = tmp_path / "sess-42.jsonl"
    transcript.write_text("\n".join(lines[:8]) + "\n", encoding="utf-8")

    first = _hook(home, transcript)
    assert first["accepted"] > 0 and first["start"] == 0
    assert first["end"] == transcript.stat().st_size
    again = _hook(home, transcript)
    assert (again["accepted"], again["duplicates"], again["lines"]) == (0, 0, 0)

    # the session goes on: the rest, a subagent's message, a compaction
    # summary, and a last line still being written
    more = lines[8:] + [
        _entry("side-1", "subagent: searching the repo for token expiry", sidechain=True),
        _entry("comp-1", "This session is being continued from a previous conversation ZZQ1"),
        _entry("cc-1", "ZZQ2 summary", isCompactSummary=True),
    ]
    half = _entry("u-late", "one more thing about the expiry test")
    with transcript.open("a", encoding="utf-8") as f:
        f.write("\n".join(more) + "\n" + half[:30])
    grown = _hook(home, transcript)
    assert grown["start"] == first["end"] and grown["accepted"] > 0
    assert grown["skipped_derived"] >= 2  # ours and the fixture's own
    assert grown["end"] == transcript.stat().st_size - 30  # the half line waits
    with transcript.open("a", encoding="utf-8") as f:
        f.write(half[30:] + "\n")
    done = _hook(home, transcript)
    assert (done["accepted"], done["lines"]) == (1, 1)

    rows = _raw(home)
    total = first["accepted"] + grown["accepted"] + done["accepted"]
    assert len(rows) == total == len({r["turn_id"] for r in rows})
    texts = " ".join(r["text"] for r in rows)
    assert "ZZQ1" not in texts and "ZZQ2" not in texts
    side = [r for r in rows if "subagent" in r["text"]]
    assert [r["stream_id"] for r in side] == ["sess-42/sidechain"]
    assert {r["stream_id"] for r in rows if r not in side} == {"sess-42"}

    # the offset is lost: the whole file again, every turn a duplicate
    _forget_offsets(home)
    lost = _hook(home, transcript)
    assert lost["start"] == 0 and lost["accepted"] == 0 and lost["duplicates"] == total
    assert len(_raw(home)) == total

    # the same file ingested at once gives the same turns
    fresh = tmp_path / "fresh"
    out = run_cli(fresh, "ingest", str(transcript), "--user", "default", "--json")
    assert json.loads(out.stdout)["accepted"] == total
    assert {r["turn_id"] for r in _raw(fresh)} == {r["turn_id"] for r in rows}


def test_capture_jsonl_of_a_growing_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    log = tmp_path / "agent.jsonl"

    def write(a: int, b: int) -> None:
        with log.open("a", encoding="utf-8") as f:
            for i in range(a, b):
                role = "user" if i % 2 == 0 else "assistant"
                f.write(json.dumps({"role": role, "text": f"same words {i % 3}"}) + "\n")

    def capture() -> dict[str, Any]:
        out = run_cli(home, "capture", "jsonl", str(log), "--user", "u", "--json")
        assert out.returncode == 0, out.stderr
        return dict(json.loads(out.stdout))

    write(0, 10)
    assert capture()["accepted"] == 10
    write(10, 25)
    grown = capture()
    # repeated texts at other lines are other turns: line numbers continue
    assert (grown["accepted"], grown["duplicates"]) == (15, 0)
    _forget_offsets(home)
    lost = capture()
    assert (lost["accepted"], lost["duplicates"]) == (0, 25)
    assert len(_raw(home)) == 25


def test_hook_without_transcript_path_exits_2(tmp_path: Path) -> None:
    out = run_cli(tmp_path, "capture", "claude-code", "--json", stdin='{"session_id": "x"}')
    assert out.returncode == 2 and "transcript_path" in out.stderr
