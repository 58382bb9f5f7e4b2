"""Helpers for the command-line tests: a memory on a temporary home for the
test's own reads and writes, the environment naming the same home for the
commands it runs (in this process through CliRunner, or in a child), and
one way to run a command and read its `--json`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from episodic.adapters.embedded import Memory
from tests.integration.helpers import make_memory


def cli_home(monkeypatch: pytest.MonkeyPatch, home: Path, **overrides: Any) -> Memory:
    """The memory on `home` (hash embedder, offline model; closed when the
    test ends); EPISODIC_HOME and friends name it until the test ends.
    Calling it again with another home moves the commands there."""
    env = {"EPISODIC_HOME": str(home), "EPISODIC_EMBEDDER": "hash", "EPISODIC_LLM": "offline"}
    env.update({f"EPISODIC_{k.upper()}": str(v) for k, v in overrides.items()})
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("EPISODIC_LLM_BASE_URL", raising=False)
    return make_memory(home, **overrides)


def invoke(*args: str, stdin: str | None = None) -> Any:
    """`episodic ARGS` in this process (CliRunner): the result."""
    from typer.testing import CliRunner

    from episodic.adapters.cli.main import app

    return CliRunner().invoke(app, list(args), input=stdin)


def cli(*args: str, code: int = 0) -> Any:
    """`episodic ARGS`, which must exit `code`: its `--json` when 0, else the result."""
    res = invoke(*args)
    assert res.exit_code == code, (args, res.exit_code, res.stdout, res.stderr)
    return json.loads(res.stdout) if code == 0 else res


def refused(*args: str, code: int = 1) -> str:
    """`episodic ARGS`, which must fail with `code`, nothing on stdout and one
    `error:` line on stderr (no traceback): that line."""
    res = invoke(*args)
    assert res.exit_code == code, (args, res.exit_code, res.stdout, res.stderr)
    assert res.stdout == "", (args, res.stdout)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), (args, res.stderr)
    return str(lines[0])
