"""`episodic-hook` hands a transcript to the spool and returns without the
stack (no database, model or framework imported); a drain captures its lines
once; bad input is one `error:` line and exit 2, never a hang (issue 29 item 7,
issue 32 finding 4)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from episodic.spool import spool_dir
from tests.integration.cli_support import cli, cli_home
from tests.integration.helpers import make_memory

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ingest" / "claude_code_session.jsonl"


def _hook(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EPISODIC_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "episodic.adapters.hook", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_the_hook_imports_only_the_standard_library() -> None:
    probe = (
        "import sys; import episodic.adapters.hook; "
        "print(sorted(m for m in ('lancedb', 'pydantic', 'typer', 'prefect', 'numpy', 'pyarrow')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_spooled_transcript_is_captured_once_by_a_drain(tmp_path: Path) -> None:
    home = tmp_path / "home"
    transcript = tmp_path / "session.jsonl"
    shutil.copy(FIXTURE, transcript)
    payload = json.dumps({"transcript_path": str(transcript), "session_id": "s"})
    for _ in range(3):  # repeated hook calls before a drain: one entry
        res = _hook(home, "claude-code", "--user", "alice", stdin=payload)
        assert (res.returncode, res.stderr) == (0, "")
    assert len(list(spool_dir(home).glob("*.json"))) == 1
    memory = make_memory(home)
    first = memory.drain_spool()
    assert first.dropped == [] and sum(c.accepted for c in first.captured) > 0
    assert list(spool_dir(home).iterdir()) == []
    again = _hook(home, "claude-code", "--user", "alice", stdin=payload)
    assert again.returncode == 0
    second = memory.drain_spool()
    assert sum(c.accepted for c in second.captured) == 0
    assert memory.status("alice")[0].raw_turns == sum(c.accepted for c in first.captured)


@pytest.mark.parametrize(
    "payload",
    [
        "not json",
        "{}",
        '{"transcript_path": "/no/such/file.jsonl"}',
        '{"transcript_path": "a\\u0000b"}',
    ],
)
def test_bad_hook_input_is_one_error_line(tmp_path: Path, payload: str) -> None:
    res = _hook(tmp_path, "claude-code", "--user", "alice", stdin=payload)
    assert res.returncode == 1  # not 2: Claude Code would read it as blocking
    assert res.stderr.startswith("error: ") and res.stderr.count("\n") == 1
    assert not spool_dir(tmp_path).exists()


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    res = _hook(tmp_path, "jsonl", str(fifo))
    assert res.returncode == 1 and "not a regular file" in res.stderr


def test_what_waits_in_the_spool_is_listed_until_a_drain_takes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hook wired with nothing running to drain it: `episodic capture
    waiting` names the transcript (its user's only with --user), and a
    drain empties the list; nothing is taken by listing."""
    home = tmp_path / "home"
    cli_home(monkeypatch, home)
    transcript = tmp_path / "session.jsonl"
    shutil.copy(FIXTURE, transcript)
    payload = json.dumps({"transcript_path": str(transcript), "session_id": "s"})
    assert _hook(home, "claude-code", "--user", "alice", stdin=payload).returncode == 0
    assert len(cli("capture", "waiting", "--json")) == 1
    [row] = cli("capture", "waiting", "--json")  # still there: listing takes nothing
    assert (row["user_id"], row["path"], row["fmt"]) == ("alice", str(transcript), "claude-code")
    assert row["waiting_s"] >= 0
    assert cli("capture", "waiting", "--user", "bob", "--json") == []
    assert cli("capture", "drain", "--json")["accepted"] > 0
    assert cli("capture", "waiting", "--json") == []
