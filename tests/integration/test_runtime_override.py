"""One documented way to the runtime (episodic.service.runtime.get_runtime) with an
explicit override for tests (use_runtime); importing never touches the
environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from episodic.service.runtime import get_runtime, use_runtime
from tests.integration.helpers import settings_at

ROOT = Path(__file__).resolve().parents[2]


def test_use_runtime_nests_and_leaves_the_environment_alone(tmp_path: Path) -> None:
    before = dict(os.environ)
    outer_s, inner_s = settings_at(tmp_path / "a"), settings_at(tmp_path / "b")
    with use_runtime(outer_s) as outer:
        assert get_runtime() is outer
        with use_runtime(inner_s) as inner:
            assert get_runtime() is inner and inner is not outer
            assert inner.store.uri != outer.store.uri
        assert get_runtime() is outer
        with use_runtime(outer):  # a runtime object itself, as is
            assert get_runtime() is outer
        # explicit settings still reach their own kept runtime
        assert get_runtime(inner_s) is not outer
    assert get_runtime() is not outer
    assert dict(os.environ) == before


def test_importing_the_packages_does_not_change_the_environment() -> None:
    code = (
        "import json, os; before = dict(os.environ);"
        "import episodic.adapters.cli.main, episodic.adapters.cli.serve, flows.consolidate, flows.ingest, flows.reflect,"
        " flows.maintain, tasks.steps, episodic.service.runtime, episodic.bench.corpus, episodic.bench.run, storage.db;"
        "print(json.dumps(sorted(set(os.environ.items()) ^ set(before.items()))))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_LOGGING")}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
