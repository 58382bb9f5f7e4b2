"""Hostile settings through the real command line: each bad value gives one
line on stderr naming it, no traceback and its exit code (episodic.errors.
ExitCode), before any work is done; a missing model key stops only the
commands that call a model. The commands run as subprocesses, concurrently."""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from episodic.errors import ExitCode
from tests.integration.reliability_support import (
    ROOT,
    fact_turns,
    run_in_root,
    runtime_env,
    write_jsonl,
)


@dataclass(frozen=True)
class Case:
    name: str
    env: dict[str, str]
    args: tuple[str, ...]
    code: ExitCode
    names: str = ""  # what the error line must mention


STATUS = ("status", "--json")
CONSOLIDATE = ("consolidate", "--json")
SEARCH = ("search", "vim", "--user", "u1", "-k")
NO_KEY = {"EPISODIC_LLM": "anthropic"}
CASES = [
    Case("embedder", {"EPISODIC_EMBEDDER": "bogus"}, STATUS, ExitCode.USAGE, "EPISODIC_EMBEDDER"),
    Case("llm", {"EPISODIC_LLM": "gpt-9"}, STATUS, ExitCode.USAGE, "EPISODIC_LLM"),
    Case(
        "threshold-negative",
        {"EPISODIC_REFLECTION_THRESHOLD": "-5"},
        CONSOLIDATE,
        ExitCode.USAGE,
        "EPISODIC_REFLECTION_THRESHOLD",
    ),
    Case(
        "threshold-nan",
        {"EPISODIC_REFLECTION_THRESHOLD": "nan"},
        CONSOLIDATE,
        ExitCode.USAGE,
        "EPISODIC_REFLECTION_THRESHOLD",
    ),
    Case(
        "threshold-inf",
        {"EPISODIC_REFLECTION_THRESHOLD": "inf"},
        STATUS,
        ExitCode.USAGE,
        "EPISODIC_REFLECTION_THRESHOLD",
    ),
    Case(
        "idle-negative",
        {"EPISODIC_IDLE_MINUTES": "-1"},
        CONSOLIDATE,
        ExitCode.USAGE,
        "EPISODIC_IDLE_MINUTES",
    ),
    Case("idle-nan", {"EPISODIC_IDLE_MINUTES": "nan"}, STATUS, ExitCode.USAGE, "IDLE_MINUTES"),
    Case("batch-zero", {"EPISODIC_BATCH_TURNS": "0"}, STATUS, ExitCode.USAGE, "BATCH_TURNS"),
    Case("timeout-text", {"EPISODIC_LLM_TIMEOUT_S": "soon"}, STATUS, ExitCode.USAGE, "TIMEOUT_S"),
    Case("cache-bool", {"EPISODIC_LLM_CACHE": "maybe"}, STATUS, ExitCode.USAGE, "LLM_CACHE"),
    Case("no-key-consolidate", NO_KEY, CONSOLIDATE, ExitCode.USAGE, "ANTHROPIC_API_KEY"),
    Case("no-key-reflect", NO_KEY, ("reflect", "--json"), ExitCode.USAGE, "ANTHROPIC_API_KEY"),
    Case(
        "bad-mode-consolidate",
        {"EPISODIC_LLM": "openai", "EPISODIC_LLM_MODE": "yaml"},
        CONSOLIDATE,
        ExitCode.USAGE,
        "EPISODIC_LLM_MODE",
    ),
    Case("no-key-status", NO_KEY, STATUS, ExitCode.OK),
    Case("no-key-ingest", NO_KEY, ("ingest", "{src}", "--json"), ExitCode.OK),
    Case("search-k0", {}, SEARCH + ("0", "--json"), ExitCode.USAGE, "k must be at least 1"),
    Case("search-kneg", {}, SEARCH + ("-3", "--json"), ExitCode.USAGE, "k must be at least 1"),
    Case(
        "home-under-a-file",
        {"EPISODIC_HOME": "{file}/home"},
        STATUS,
        ExitCode.STORAGE,
        "Not a directory",
    ),
]


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    root = tmp_path_factory.mktemp("hostile-settings")
    src = write_jsonl(root / "in.jsonl", fact_turns(episodes=2))
    afile = root / "afile"
    afile.write_text("not a directory\n")

    def run(case: Case) -> Run:
        home = root / case.name
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
        env.pop("ANTHROPIC_API_KEY", None)
        env.pop("OPENAI_API_KEY", None)
        env.update(runtime_env(home), PREFECT_HOME=str(home / "prefect"), PYTHONPATH=str(ROOT))
        env.update({k: v.format(file=afile) for k, v in case.env.items()})
        args = [a.format(src=src) for a in case.args]
        p = run_in_root([sys.executable, "-m", "episodic.adapters.cli.main", *args], env)
        return Run(p.returncode, p.stdout, p.stderr)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip((c.name for c in CASES), pool.map(run, CASES), strict=True))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_bad_setting_is_one_line_and_its_exit_code(case: Case, runs: dict[str, Run]) -> None:
    r = runs[case.name]
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.code == case.code, r.stderr[-3000:]
    if case.code == ExitCode.OK:
        json.loads(r.stdout)  # the command did its work and answered in JSON
        return
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert case.names in lines[0]
    assert r.stdout == ""  # refused before any output
