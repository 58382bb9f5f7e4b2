"""Issue 4, end to end: ingest LoCoMo's five dev conversations and
consolidate them through the service the CLI calls (`Memory.ingest`,
`Memory.consolidate`: the summary `episodic consolidate --json` prints), then
`episodic episodes --json` shows for every conversation closed episodes with a
reason and a salience between 1 and 10."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from episodic.adapters.cli.main import app
from episodic.prompts.digest import BATCH_MAX_EPISODES
from episodic.vocab import Stage
from tests.conftest import shared_data
from tests.integration.facts_support import memory_for

pytestmark = pytest.mark.usefixtures("prefect_harness")
USER = "loco"
KEYS = {"turns_processed", "episodes_closed", "by_reason", "llm_calls", "tokens"}


def _json(*args: str) -> Any:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_locomo_dev5_consolidates_every_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = shared_data("locomo", "locomo_dev5.json")
    conversations = {s["sample_id"] for s in json.loads(path.read_text(encoding="utf-8"))}
    memory = memory_for("offline", tmp_path / "home", monkeypatch)  # hash embedder, offline LLM

    ingested = memory.ingest(path, user_id=USER).as_dict()
    assert ingested["rejected"] == 0 and set(ingested["streams"]) == conversations

    summary = memory.consolidate()
    assert KEYS <= set(summary)
    assert summary["turns_processed"] == ingested["accepted"]
    assert summary["episodes_closed"] > 0
    assert sum(summary["by_reason"].values()) == summary["episodes_closed"]
    # one digest question per batch of at most BATCH_MAX_EPISODES episodes, at least
    assert summary["llm_calls"] * BATCH_MAX_EPISODES >= summary["episodes_closed"]
    assert summary["llm_calls"] < summary["episodes_closed"]  # batched: fewer calls than episodes
    assert set(summary["tokens"]) == {"input", "output"}
    _assert_stage_times(summary)

    episodes = _json("episodes", "--user", USER, "--json")
    assert len(episodes) == summary["episodes_closed"]
    assert {e["stream_id"] for e in episodes} == conversations  # every conversation
    for e in episodes:
        assert e["reason"], e
        assert isinstance(e["salience"], int) and 1 <= e["salience"] <= 10, e
        assert e["salience_source"] == "offline"
        assert e["summary"]
        assert e["first_seq"] <= e["last_seq"]
    # the salience uses the scale, not one value
    assert len({e["salience"] for e in episodes}) >= 4
    # and no turn is in two episodes
    spans = sorted((e["stream_id"], e["first_seq"], e["last_seq"]) for e in episodes)
    for (s1, _, last), (s2, first, _) in zip(spans, spans[1:], strict=False):
        assert s1 != s2 or first == last + 1

    # a second run has nothing new to read
    again = memory.consolidate()
    assert again["turns_processed"] == 0 and again["episodes_closed"] == 0


def _assert_stage_times(summary: dict[str, Any]) -> None:
    """Issue 19: where the run's time went. Salience chunks run in threads,
    so the sum may pass the wall time; no single step can."""
    stages = summary["stages"]
    assert set(stages) == {s.value for s in Stage}
    for step in ("read", "embed", "segment", "write", "salience", "facts", "llm_wait"):
        assert stages[step] > 0, (step, stages)
    assert max(stages.values()) <= summary["seconds"], stages
    # the segmentation poll's own steps run in one thread per user
    poll = stages["read"] + stages["embed"] + stages["segment"] + stages["write"]
    assert poll <= summary["seconds"], stages
    asked = stages["salience"] + stages["facts"] + stages["reflection"] + stages["segment"]
    assert stages["llm_wait"] <= asked, stages  # a part of the steps that ask
    assert summary["estimated_cost_usd"] == 0.0  # the offline provider
