"""`episodic search QUERY --user U --json`: items with every part of their score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.integration.helpers import make_runtime
from tests.integration.memory_items import episode, put

PARTS = {
    "score",
    "recency",
    "importance",
    "similarity",
    "raw_recency",
    "raw_importance",
    "raw_similarity",
    "hours_since_access",
    "recall_count",
    "item_id",
    "kind",
    "text",
}


def test_search_json_gives_score_components(tmp_path: Path) -> None:
    rt = make_runtime(tmp_path / "home")
    put(
        rt,
        episode(rt, "u1", "the flaky integration test on the payments queue", seq=0, salience=7),
        episode(rt, "u1", "a birthday cake recipe with lemon", seq=10, salience=3),
        episode(rt, "u2", "the flaky integration test on the payments queue", seq=0),
    )
    out = CliRunner().invoke(
        app, ["search", "flaky payments test", "--user", "u1", "-k", "2", "--gamma", "2", "--json"]
    )
    assert out.exit_code == 0, out.output
    items = json.loads(out.stdout)
    assert 1 <= len(items) <= 2
    assert all(set(i) == PARTS for i in items)
    assert items[0]["text"].startswith("the flaky integration test")
    u1 = {e.episode_id for e in rt.episodes.list("u1")}
    assert {i["item_id"] for i in items} <= u1
    for i in items:
        assert i["score"] == pytest.approx(i["recency"] + i["importance"] + 2 * i["similarity"])
    # the CLI search is a real recall: the statistics moved
    recalled = {e.episode_id: e.recall_count for e in rt.episodes.list("u1")}
    assert all(recalled[i["item_id"]] == 1 for i in items)


def test_search_rejects_an_unknown_kind(tmp_path: Path) -> None:
    make_runtime(tmp_path / "home")
    out = CliRunner().invoke(app, ["search", "x", "--user", "u1", "--kinds", "turns", "--json"])
    assert out.exit_code == 2
