"""The LoCoMo evaluation: evidence normalisation, the equal turn budget, and a
full run on a small synthetic conversation in LoCoMo's format (hash embedder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from episodic.bench.locomo_eval import (
    METHODS,
    Unit,
    normalise_evidence,
    run_locomo_eval,
    take_budget,
    windows,
)
from tests.conftest import shared_data

TOPICS = {
    1: ("Ana", "Ben", "pottery class clay wheel glaze kiln vase", "7:00 pm on 3 May, 2023"),
    2: ("Ben", "Ana", "marathon training running shoes knee coach", "10:15 am on 9 June, 2023"),
}


def _sample(turns_per_session: int = 12) -> dict[str, object]:
    conv: dict[str, object] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for n, (first, second, words, date) in TOPICS.items():
        conv[f"session_{n}_date_time"] = date
        conv[f"session_{n}"] = [
            {
                "speaker": first if k % 2 == 0 else second,
                "dia_id": f"D{n}:{k + 1}",
                "text": f"{words.split()[k % len(words.split())]} and {words} note {k}",
            }
            for k in range(turns_per_session)
        ]
    conv["session_3_date_time"] = "1:00 pm on 1 July, 2023"  # a date without content
    qa = [
        {
            "question": "What did Ana glaze in the kiln?",
            "answer": "a vase",
            "evidence": ["D1:3"],
            "category": 1,
        },
        {
            "question": "Who coaches the marathon running?",
            "answer": "a coach",
            "evidence": ["D2:4; D2:05"],
            "category": 2,
        },
        {
            "question": "Which pottery wheel and shoes?",
            "answer": "both",
            "evidence": ["D:1:2", "D2:11", "D"],
            "category": 3,
        },
        {"question": "Anything else?", "answer": "no", "evidence": [], "category": 5},
        {
            "question": "A turn that does not exist?",
            "answer": "-",
            "evidence": ["D9:1"],
            "category": 4,
        },
    ]
    return {"sample_id": "conv-test", "conversation": conv, "qa": qa}


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo_tiny.json"
    path.write_text(json.dumps([_sample()]), encoding="utf-8")
    return path


def test_malformed_evidence_ids_are_normalised() -> None:
    assert normalise_evidence(["D8:6; D9:17"]) == (["D8:6", "D9:17"], 0)
    assert normalise_evidence(["D:11:26", "D30:05"]) == (["D11:26", "D30:5"], 0)
    assert normalise_evidence(["D", "D1:2", "D1:02"]) == (["D1:2"], 1)
    assert normalise_evidence([]) == ([], 0)


def test_windows_restart_at_each_session() -> None:
    assert windows([[0, 1, 2], [3, 4, 5, 6, 7]], size=2) == [[0, 1], [2], [3, 4], [5, 6], [7]]
    with pytest.raises(ValueError):
        windows([[0]], size=0)


def test_budget_takes_units_in_rank_order_and_cuts_the_last() -> None:
    big = Unit(("D1:1", "D1:2", "D1:3", "D1:4"), (0, 1, 2, 3))
    small = Unit(("D2:1", "D2:2"), (4, 5))
    assert take_budget([small, big], 5) == ["D2:1", "D2:2", "D1:1", "D1:2", "D1:3"]
    assert take_budget([big, small], 4) == ["D1:1", "D1:2", "D1:3", "D1:4"]
    assert take_budget([small], 50) == ["D2:1", "D2:2"]


def test_eval_reports_every_method_at_each_k_and_budget(locomo_file: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    res = run_locomo_eval(locomo_file, ks=[1, 3], budget=6, embedder="hash", workdir=work)
    # the empty-evidence item and the one citing a turn that does not exist are left out
    assert res["n_questions"] == 3
    assert res["questions_without_evidence"] == 2
    assert res["evidence_malformed_dropped"] == 1 and res["evidence_unknown_dropped"] == 1
    assert res["ks"] == [1, 3] and res["budget"] == 6
    assert set(METHODS) <= set(res["methods"])  # and the hybrid baselines
    m = res["methods"]
    assert m["turn"]["mean_turns_per_unit"] == 1.0 and m["turn"]["n_units"] == 24
    assert m["turn"]["turns_at_k"] == {"1": 1.0, "3": 3.0}
    assert m["session"]["n_units"] == 2  # the session without turns makes no unit
    assert m["session"]["recall_at_k"]["3"] == 1.0  # every session retrieved: all evidence
    assert m["window10"]["n_units"] == 4  # 12 turns per session: 10 + 2, twice
    for name, stats in m.items():
        assert 0.0 <= stats["recall_at_budget"] <= 1.0, name
        if name not in METHODS:  # a hybrid baseline: budgets only
            assert 0.0 <= stats["recall_at_token_budget"] <= 1.0, name
            continue
        for k in ("1", "3"):
            assert 0.0 <= stats["recall_at_k"][k] <= 1.0, name
        assert 0.0 <= stats["recall_at_budget"] <= 1.0
        assert set(stats["recall_at_budget_by_category"]) == {"1", "2", "3"}
    # every turn ends in exactly one episode
    assert m["episodes"]["n_units"] * m["episodes"]["mean_turns_per_unit"] == pytest.approx(24)
    assert sum(res["episode_boundaries"].values()) == m["episodes"]["n_units"]
    # a second run on the same workdir reuses the store and gives the same figures
    again = run_locomo_eval(locomo_file, ks=[1, 3], budget=6, embedder="hash", workdir=work)
    assert again["methods"] == res["methods"]


def test_detector_overrides_and_bad_arguments(locomo_file: Path) -> None:
    res = run_locomo_eval(locomo_file, ks=[2], budget=4, embedder="hash", detector={"max_turns": 3})
    assert res["detector_overrides"] == {"max_turns": 3}
    assert res["methods"]["episodes"]["mean_turns_per_unit"] <= 3.0
    with pytest.raises(ValueError, match="unknown config keys"):
        run_locomo_eval(locomo_file, embedder="hash", detector={"no_such_setting": 1})
    with pytest.raises(ValueError):
        run_locomo_eval(locomo_file, embedder="hash", budget=0)


def test_cli_prints_json(locomo_file: Path) -> None:
    from episodic.adapters.cli.main import app

    out = CliRunner().invoke(
        app,
        [
            "eval",
            "locomo",
            "--path",
            str(locomo_file),
            "--k",
            "1,2",
            "--budget",
            "5",
            "--embedder",
            "hash",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    res = json.loads(out.stdout)
    assert res["n_questions"] == 3
    assert set(res["methods"]["episodes"]["recall_at_k"]) == {"1", "2"}
    assert "recall_at_budget" in res["methods"]["window10"]
    m = res["methods"]
    for key, best in res["best_baseline"].items():
        # the best of the non-segmented baselines, and the shipped search's margin over it
        assert best["method"] in res["baselines"] and "episode" not in best["method"]
        assert best["value"] == max(m[b][key] for b in res["baselines"])
        assert best["shipped_margin"] == pytest.approx(m["shipped"][key] - best["value"], abs=1e-4)
    assert set(res["best_baseline"]) == {"recall_at_budget", "recall_at_token_budget"}


def test_cli_prints_a_table_for_a_person(locomo_file: Path) -> None:
    """Without --json the methods measured at the budgets only (the hybrid
    baselines, the shipped search) still print: a row each, not a KeyError."""
    from episodic.adapters.cli.main import app

    args = ["eval", "locomo", "--path", str(locomo_file), "--budget", "5", "--embedder", "hash"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    assert out.exception is None


def test_first_dev_conversation_runs() -> None:
    path = shared_data("locomo", "locomo_dev5.json")
    res = run_locomo_eval(path, embedder="hash", max_conversations=1)
    assert res["n_conversations"] == 1 and res["n_questions"] > 100
    assert res["methods"]["turn"]["n_units"] == 419  # conv-26 holds 419 turns
    assert res["evidence_malformed_dropped"] + res["evidence_unknown_dropped"] <= 5
