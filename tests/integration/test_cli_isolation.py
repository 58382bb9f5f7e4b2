"""Reads through the CLI never cross users, whatever the user id looks like:
an id written as an SQL injection gets nothing of another user's episodes,
facts, history or search results, and only its own when it has some."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from episodic.adapters.embedded import Memory
from flows.consolidate import consolidate
from tests.integration.cli_support import cli_home, refused
from tests.integration.facts_support import Say, ingest

pytestmark = pytest.mark.usefixtures("prefect_harness")

HOSTILE = ["a' OR '1'='1", "alice' OR user_id != '", "%", 'alice" OR 1=1 --', "*"]
JAN = "2025-01-10T09:00:00+00:00"


def _json(*args: str) -> Any:
    from episodic.adapters.cli.main import app

    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _unknown(*args: str) -> None:
    """A user-scoped read as a user with nothing stored: exit 1, one line, stdout empty."""
    assert refused(*args).startswith("error: no user ")


@pytest.fixture
def alice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Memory:
    m = cli_home(monkeypatch, tmp_path / "home")
    says = [
        Say("I live in Paris.", JAN, user="alice"),
        Say("Paris is lovely in spring, noted.", JAN, role="assistant", user="alice"),
        Say("I have a dog named Rex.", JAN, user="alice"),
    ]
    ingest(m.rt, tmp_path / "alice.jsonl", says)
    consolidate(user="alice", flush=True, memory=m)
    m.rt.store.ensure_indexes()  # full-text search on, as after `episodic ingest`
    assert m.episodes("alice") and m.facts("alice")
    return m


@pytest.mark.parametrize("user", HOSTILE)
def test_hostile_user_id_reads_nothing_of_alice(alice: Memory, user: str) -> None:
    _unknown("episodes", "--user", user, "--json")
    _unknown("facts", "--user", user, "--json")
    _unknown("facts", "--user", user, "--all", "--json")
    _unknown("facts", "--user", user, "--as-of", "2030-01-01", "--json")
    for query in ("Paris", "dog named Rex", "' OR '1'='1"):
        _unknown("search", query, "--user", user, "--json")
    fact = alice.facts("alice")[0]
    _unknown("history", fact.fact_id, "--user", user, "--json")
    episode = alice.episodes("alice")[0]
    _unknown("episode", episode.episode_id, "--user", user, "--json")
    # alice still sees her own
    hits = _json("search", "Paris", "--user", "alice", "--json")
    # the best hit (a turn with its neighbours, or a fact) holds what was asked
    top = hits[0]
    assert "Paris" in top["text"] or any("Paris" in t["text"] for t in top["turns"])


def test_hostile_user_with_data_sees_only_its_own(alice: Memory, tmp_path: Path) -> None:
    user = HOSTILE[0]
    ingest(alice.rt, tmp_path / "mallory.jsonl", [Say("I live in Lisbon.", JAN, user=user)])
    consolidate(user=user, flush=True, memory=alice)
    facts = _json("facts", "--user", user, "--all", "--json")
    assert [f["text"] for f in facts] == ["User lives in Lisbon"]
    assert {f["fact_id"] for f in facts} == {f.fact_id for f in alice.rt.facts.list(user)}
    assert not {f["fact_id"] for f in facts} & {f.fact_id for f in alice.facts("alice")}
    eps = _json("episodes", "--user", user, "--json")
    assert len(eps) == 1 and eps[0]["n_turns"] == 1
    theirs = alice.episodes("alice")[0].episode_id  # reported exactly as a missing one
    line = refused("episode", theirs, "--user", user, "--json")
    assert line.startswith(f"error: no episode {theirs!r}")
    hits = _json("search", "Paris Rex Lisbon", "--user", user, "--json")
    assert hits and all("Paris" not in h["text"] and "Rex" not in h["text"] for h in hits)
    # and alice's view did not change
    mine = {f["text"] for f in _json("facts", "--user", "alice", "--json")}
    assert mine == {"User lives in Paris", "User has a dog named Rex"}
