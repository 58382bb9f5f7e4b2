"""The CLI's surface: flags show as flags in `--help` at any width, and a
consolidation with full-text indexes plus a search leave no LanceDB
deprecation warning on stderr (the Rust logger writes to fd 2, so capfd)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flows.consolidate import consolidate
from tests.integration.cli_support import cli_home
from tests.integration.helpers import synthetic_stream, write_jsonl

COMMANDS = [
    ["status"], ["ingest"], ["consolidate"], ["episodes"], ["episode"], ["facts"], ["history"],
    ["search"], ["reflections"], ["doctor"], ["rejected"], ["export"], ["import"], ["plot"],
    ["eval", "segment"], ["eval", "locomo"], ["keys", "create"], ["capture", "jsonl"],
]  # fmt: skip


@pytest.mark.parametrize("columns", ["80", "200"])
def test_flags_show_as_flags_in_help(columns: str) -> None:
    from episodic.adapters.cli.main import app

    for cmd in COMMANDS:
        res = CliRunner().invoke(app, [*cmd, "--help"], env={"COLUMNS": columns})
        assert res.exit_code == 0, res.output
        assert "<bool>" not in res.output, cmd
        assert "--json" in res.output, cmd


def _commands(group: Any) -> list[Any]:
    out = []
    for cmd in group.commands.values():
        out.extend(_commands(cmd) if hasattr(cmd, "commands") else [cmd])
    return out


def test_every_command_list_line_is_one_sentence_and_flags_have_no_type() -> None:
    """The command list shows each help's first paragraph: a docstring's line
    breaks must not cut it mid-sentence; the group's own --help is a flag."""
    import typer.main

    from episodic.adapters.cli.main import app

    root = typer.main.get_command(app)
    commands = _commands(root)
    assert len(commands) >= 25
    for cmd in commands:
        assert cmd.help, cmd.name
        assert "\n" not in cmd.help.split("\n\n")[0], cmd.name
    ctx = root.make_context("episodic", ["--help"], resilient_parsing=True)
    flags = [p for p in root.get_params(ctx) if getattr(p, "is_flag", False)]
    assert flags and all(p.metavar == "" for p in flags)


@pytest.mark.usefixtures("prefect_harness")
def test_no_lance_deprecation_warning(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic.adapters.cli.main import app

    def says(stream: str, ts: str, *texts: str) -> list[dict[str, str]]:
        row = {"user_id": "u1", "stream_id": stream, "role": "user", "ts": ts}
        return [{**row, "text": t} for t in texts]

    turns = synthetic_stream("u1", "s1")
    first = write_jsonl(tmp_path / "a.jsonl", turns + says("s1", "2025-03-02T09:00:00+00:00",
                        "I live in Paris.", "I have a dog named Rex."))  # fmt: skip
    turns = synthetic_stream("u1", "s2") + says("s2", "2025-03-09T09:00:00+00:00",
                                                "I moved to Berlin.", "I use vim.")  # fmt: skip
    second = write_jsonl(tmp_path / "b.jsonl", turns)
    m = cli_home(monkeypatch, tmp_path / "h")
    CliRunner().invoke(app, ["ingest", str(first), "--json"])
    consolidate(flush=True, memory=m)
    m.rt.store.ensure_indexes()  # full-text indexes on episodes and facts now
    assert m.rt.store.has_fts("facts")
    CliRunner().invoke(app, ["ingest", str(second), "--json"])
    consolidate(flush=True, memory=m)  # fact merge looks candidates up by text too
    res = CliRunner().invoke(app, ["search", "Paris deploy", "--user", "u1", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)
    err = capfd.readouterr().err
    assert "lance::dataset::scanner" not in err and "Deprecation warning" not in err
