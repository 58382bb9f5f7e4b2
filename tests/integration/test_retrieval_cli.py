"""`episodic search QUERY --user U --json`: hybrid hits with their turns, their
episode and every part of their score; `episodic episode ID`; `episodic reflections`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from episodic.adapters.cli.main import app
from episodic.service.segment import poll_stream
from tests.integration.cli_support import cli_home
from tests.integration.helpers import synthetic_stream, write_jsonl
from tests.integration.memory_items import reflection

PARTS = {
    "kind",
    "item_id",
    "text",
    "turns",
    "episode_id",
    "provenance",
    "score",
    "relevance",
    "recency",
    "importance",
    "rrf",
    "text_rank",
    "dense_rank",
    "cosine",
    "seq",
}


def _ingest(rt, tmp_path: Path, user: str) -> None:  # type: ignore[no-untyped-def]
    src = write_jsonl(tmp_path / f"{user}.jsonl", synthetic_stream(user=user))
    out = CliRunner().invoke(app, ["ingest", str(src), "--format", "jsonl", "--json"])
    assert out.exit_code == 0, out.output
    head = next(h.head_seq for h in rt.raw.streams(user))
    poll_stream(rt, user, "s1", head_seq=head, flush=True)


def test_search_json_gives_turns_episode_and_score_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = cli_home(monkeypatch, tmp_path / "home")
    rt = m.rt
    _ingest(rt, tmp_path, "u1")
    _ingest(rt, tmp_path, "u2")
    rt.reflections.write([reflection(rt, "u1", "the user keeps deploying to staging with helm")])
    out = CliRunner().invoke(
        app, ["search", "helm staging deploy", "--user", "u1", "-k", "3", "--json"]
    )
    assert out.exit_code == 0, out.output
    items = json.loads(out.stdout)
    assert 1 <= len(items) <= 3
    assert all(set(i) == PARTS for i in items)
    # the JSON is the service's view: what the HTTP API returns for the same call
    assert items == [h.as_json() for h in m.search("u1", "helm staging deploy", k=3, record=False)]
    first = next(i for i in items if i["kind"] == "turn")
    assert "helm" in first["text"]
    assert [t["turn_id"] for t in first["turns"]] == [first["item_id"]]  # the hit alone
    mine = {t.turn_id for t in rt.raw.read("u1", "s1", -1, 10_000)}
    for i in items:
        assert {t["turn_id"] for t in i["turns"]} <= mine
        assert 0.0 <= i["relevance"] <= 1.0
        assert i["score"] == pytest.approx(
            i["relevance"] + 0.1 * i["recency"] + 0.1 * i["importance"], abs=1e-5
        )
    returned = [t["turn_id"] for i in items for t in i["turns"]]
    assert len(returned) == len(set(returned))  # no turn twice
    # a turn hit shows its own text, also when a better hit already returned it
    raw = {t.turn_id: t.text for t in rt.raw.read("u1", "s1", -1, 10_000)}
    wide = CliRunner().invoke(
        app, ["search", "helm staging deploy", "--user", "u1", "-k", "10", "--json"]
    )
    assert wide.exit_code == 0, wide.output
    hits = [i for i in json.loads(wide.stdout) if i["kind"] == "turn"]
    assert hits and all(i["text"] == raw[i["item_id"]] for i in hits)
    # a real recall: the episode the turns came from was recalled once
    eps = {e.episode_id: e for e in rt.episodes.list("u1")}
    assert first["episode_id"] in eps and eps[first["episode_id"]].recall_count >= 1

    shown = CliRunner().invoke(app, ["episode", first["episode_id"], "--user", "u1", "--json"])
    assert shown.exit_code == 0, shown.output
    ep = json.loads(shown.stdout)
    assert first["item_id"] in {t["turn_id"] for t in ep["turns"]}
    other = CliRunner().invoke(app, ["episode", first["episode_id"], "--user", "u2", "--json"])
    assert other.exit_code == 1

    refl = CliRunner().invoke(app, ["reflections", "--user", "u1", "--json"])
    assert refl.exit_code == 0, refl.output
    assert [r["text"] for r in json.loads(refl.stdout)] == [
        "the user keeps deploying to staging with helm"
    ]


def test_search_rejects_an_unknown_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    m = cli_home(monkeypatch, tmp_path / "home")
    _ingest(m.rt, tmp_path, "u1")
    out = CliRunner().invoke(app, ["search", "x", "--user", "u1", "--kinds", "episodes", "--json"])
    assert out.exit_code == 2 and out.stdout == ""
    assert out.stderr.startswith("error: unknown kind 'episodes'")
