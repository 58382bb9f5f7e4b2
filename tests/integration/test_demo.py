"""`episodic demo`, the README's first command: the bundled sample through the
whole job on a fresh home (hash embedder, offline model), ranked by the
shipped search."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from tests.integration.helpers import make_memory

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_demo_consolidates_the_sample_and_a_rerun_adds_nothing(tmp_path: Path) -> None:
    from episodic.adapters.cli.demo import QUERY, USER, run_demo

    m = make_memory(tmp_path / "home")
    out = io.StringIO()
    summary = run_demo(Console(file=out, width=120), m)
    assert summary["turns_processed"] > 50 and summary["episodes_closed"] >= 5
    stored = m.rt.raw.count(USER)
    assert stored == summary["turns_processed"]
    assert m.rt.episodes.unscored(USER) == []
    assert m.facts(USER)  # the sample states facts about the user
    # step 5 shows the shipped search's best hits, best first
    best = m.search(USER, QUERY, k=3, record=False)[0]
    assert "5. search" in out.getvalue() and best.text[:30] in out.getvalue()
    again = run_demo(Console(file=io.StringIO(), width=120), m)
    assert again["turns_processed"] == 0 and m.rt.raw.count(USER) == stored
