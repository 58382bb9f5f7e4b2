"""`episodic demo`, the README's first command: the bundled sample through the
whole job on a fresh home (hash embedder, offline model)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from tests.integration.helpers import make_runtime

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_demo_consolidates_the_sample_and_a_rerun_adds_nothing(tmp_path: Path) -> None:
    from episodic.adapters.cli.demo import run_demo

    rt = make_runtime(tmp_path / "home")
    summary = run_demo(Console(file=io.StringIO(), width=120))
    assert summary["turns_processed"] > 50 and summary["episodes_closed"] >= 5
    stored = rt.raw.count("demo")
    assert stored == summary["turns_processed"]
    assert rt.episodes.unscored("demo") == []
    assert rt.facts.list("demo")  # the sample states facts about the user
    again = run_demo(Console(file=io.StringIO(), width=120))
    assert again["turns_processed"] == 0 and rt.raw.count("demo") == stored
