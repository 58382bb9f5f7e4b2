"""Guard: on a small fixed slice of LoCoMo (the first four sessions of conv-30,
read from the shared data, never copied), the shipped search must beat
cosine-only single turns by a margin, at an equal budget of turns and of
tokens. A reversed or random ranking, or a search that drops BM25, fails here.
The figures are in-sample: dev5 chose the design."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.conftest import shared_data

BUDGET = 10  # turns; the slice holds 77
# measured (in-sample): shipped .68 / .65, turn_cos .54 / .57 (turns / tokens);
# .80 / .75 before the other speaker's turns counted half: this slice holds
# LoCoMo's adversarial questions, which name the wrong person ("What was Jon's
# favorite dancing memory?" is Gina's). Without BM25 the search reads .57 / .55.
MARGIN = 0.07


def _slice(tmp_path: Path) -> Path:
    data = json.loads(shared_data("locomo", "locomo_dev5.json").read_text(encoding="utf-8"))
    sample = next(s for s in data if s["sample_id"] == "conv-30")
    conv = {
        k: v
        for k, v in sample["conversation"].items()
        if not k.startswith("session_") or int(k.split("_")[1]) <= 4
    }
    path = tmp_path / "locomo_slice.json"
    path.write_text(json.dumps([{**sample, "conversation": conv}]), encoding="utf-8")
    return path


def _eval(path: Path, budget: int, tmp_path: Path, monkeypatch: Any) -> dict[str, Any]:
    """`episodic eval locomo --json` on `path`: the methods' figures."""
    from episodic.adapters.cli.main import app

    monkeypatch.setenv("EPISODIC_HOME", str(tmp_path / "home"))
    args = ["eval", "locomo", "--path", str(path), "--budget", str(budget), "--json"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    res: dict[str, Any] = json.loads(out.stdout)
    assert res["shipped"] == "shipped"
    return res


def test_shipped_search_beats_cosine_single_turns(tmp_path: Path, monkeypatch: Any) -> None:
    res = _eval(_slice(tmp_path), BUDGET, tmp_path, monkeypatch)
    assert "turn_cos" in res["baselines"] and "turn_pm1_hybrid" in res["baselines"]
    assert not any("episode" in b for b in res["baselines"])
    m = res["methods"]
    for key in ("recall_at_budget", "recall_at_token_budget"):
        assert m["shipped"][key] >= m["turn_cos"][key] + MARGIN, (key, m["shipped"], m["turn_cos"])
        assert m["shipped"][key] >= m["turn"][key] + MARGIN  # the old cosine method, same figure


# REALTALK chats, whole, measured in-sample (dev5 chose the design) at a
# budget of 50 turns. Chat 3: .895 with another speaker's turns counting half
# when the question names one (.848 without). Chat 1 (476 messages, 70
# questions): .772 with that rule and the cosine spread to a turn's neighbours
# as a third ranking (.744 without the spread; .775 / .741 before the rule),
# .741 with a turn hit returned alone (.754 with a neighbour a side: chat 1 is
# one of the two dev conversations of ten that lost; dev5 as a whole rose
# .786 -> .808), .754 with cosine at equal weight in the RRF (.740 at half weight), with
# speakers' names out of the turns' query and passage relevance (.722 without
# them; .675 without query expansion too, .651 before the
# documents held their days), turn_cos .614, window5_hybrid .666 (.617 at
# equal weight); chat 3's turn_cos .741. Each floor fails when its rule goes.
# At an equal token budget single turns do better on chat 1 (.718): reported
# in docs/retrieval.md, not guarded.
# Over the best non-segmented baseline (turn_hybrid on both chats, .629 and
# .763) the margins read .144 and .132; issue 31 asks for .03.
REALTALK_FLOORS = {0: 0.765, 2: 0.885}  # chat index -> floor
REALTALK_MARGIN = 0.03


@pytest.mark.parametrize("chat", sorted(REALTALK_FLOORS))
def test_shipped_search_holds_its_figure_on_a_real_chat(
    chat: int, tmp_path: Path, monkeypatch: Any
) -> None:
    data = json.loads(shared_data("realtalk", "realtalk_dev5.json").read_text(encoding="utf-8"))
    path = tmp_path / f"chat{chat + 1}.json"
    path.write_text(json.dumps(data[chat : chat + 1]), encoding="utf-8")
    res = _eval(path, 50, tmp_path, monkeypatch)
    got = res["methods"]["shipped"]["recall_at_budget"]
    assert got >= REALTALK_FLOORS[chat], got
    best = res["best_baseline"]["recall_at_budget"]
    assert best["shipped_margin"] >= REALTALK_MARGIN, best
