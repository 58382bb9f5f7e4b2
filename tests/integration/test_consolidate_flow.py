"""The consolidate flow under Prefect's test harness on a real LanceDB."""

from __future__ import annotations

from pathlib import Path

import pytest

from episodic.service.ingest import ingest_file
from flows.consolidate import consolidate
from tests.integration.helpers import make_memory, synthetic_stream, write_jsonl

pytestmark = pytest.mark.usefixtures("prefect_harness")


def _ingest(rt, tmp_path: Path, turns, name: str = "t.jsonl"):  # type: ignore[no-untyped-def]
    return ingest_file(rt.raw, write_jsonl(tmp_path / name, turns), "jsonl")


def test_flow_closes_scores_and_is_incremental(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    rt = memory.rt
    turns = synthetic_stream()
    rep = _ingest(rt, tmp_path, turns)
    assert rep.accepted == len(turns)
    first = consolidate(user="u1", flush=True, memory=memory)
    assert isinstance(first, dict)
    assert first["turns_processed"] == len(turns)
    eps = rt.episodes.list("u1")
    assert eps and first["episodes_closed"] == len(eps)
    # every turn in exactly one episode, in order, nothing lost
    seqs = [s for e in eps for s in range(e.first_seq, e.last_seq + 1)]
    assert seqs == list(range(len(turns)))
    assert all(1 <= e.salience <= 10 and e.salience_source == "offline" for e in eps)
    assert all(e.boundary_reason for e in eps)
    # a second poll with nothing new reads nothing and closes nothing
    again = consolidate(user="u1", memory=memory)
    assert isinstance(again, dict)
    assert again["turns_processed"] == 0 and again["episodes_closed"] == 0
    assert len(rt.episodes.list("u1")) == len(eps)


def test_one_pass_equals_many_polls(tmp_path: Path) -> None:
    turns = synthetic_stream(n_per_topic=8)
    whole = make_memory(tmp_path / "a")
    _ingest(whole.rt, tmp_path, turns, "all.jsonl")
    consolidate(user="u1", flush=True, memory=whole)
    expected = [(e.first_seq, e.last_seq, e.boundary_reason) for e in whole.rt.episodes.list("u1")]

    grown = make_memory(tmp_path / "b")
    rt = grown.rt
    for i in range(0, len(turns), 7):
        _ingest(rt, tmp_path, turns[: i + 7], "grow.jsonl")  # the file grows
        consolidate(user="u1", memory=grown)
    consolidate(user="u1", flush=True, memory=grown)
    got = [(e.first_seq, e.last_seq, e.boundary_reason) for e in rt.episodes.list("u1")]
    assert got == expected
