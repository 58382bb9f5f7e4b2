"""Guard for current-truth@1 (issue 31): on a slice of the knowledge-update
cases (bench/current_truth_cases.py, written before the ranking), each goes
through add -> consolidate -> add ten days later -> consolidate, and the
shipped search's first hit must hold the current value. "where does the
user live" must be answered by the active fact. In-sample: 9/10 on all ten
(3/10 before issue 31's ranking)."""

from __future__ import annotations

from pathlib import Path

from episodic.bench.current_truth import run_current_truth

SLICE = ("city", "employer", "pet", "image_size", "car")


def test_the_current_value_comes_first(tmp_path: Path) -> None:
    res = run_current_truth(workdir=tmp_path / "ct", names=SLICE)
    assert res["n_cases"] == len(SLICE)
    failed = [(c["case"], c["hits"][:3]) for c in res["cases"] if not c["ok"]]
    assert not failed, failed
    city = next(c for c in res["cases"] if c["case"] == "city")
    assert city["top_kind"] == "fact", city["hits"]
    assert res["current_truth_at_1"] == 1.0


def test_facts_are_text_ranked_right_after_consolidation(tmp_path: Path) -> None:
    """No maintain, no ingest: the fact written by consolidate has a text rank."""
    res = run_current_truth(workdir=tmp_path / "ct", names=("city",))
    city = res["cases"][0]
    assert city["top_kind"] == "fact" and city["top_text_rank"] >= 1, city
