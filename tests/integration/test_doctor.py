"""`episodic doctor --json`: ok on a healthy store; each broken invariant is
named, scoped to the user asked about, and only a stale head is repaired.
Real LanceDB in tmp_path, through the CLI; stores are broken the way a crash
or the old append (a head behind raw, then seqs handed out twice) breaks them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from episodic import crashpoints
from episodic.adapters.cli.main import app
from episodic.crashpoints import InjectedCrash
from episodic.models import TurnIn
from episodic.service.runtime import Runtime
from episodic.service.segment import poll_stream
from storage.schemas import schema
from tests.integration.cli_support import cli_home
from tests.integration.helpers import turn_ins

T0 = datetime(2025, 5, 1, 8, 0, tzinfo=UTC)
ODD_USER = 'o\'brien "x" 100%'


def _turns(a: int, b: int, stream: str = "s1", user: str = "u1") -> list[TurnIn]:
    # an hour between blocks of five: the detector cuts there
    return turn_ins(a, b, stream, user, text="step {i}: the deploy pipeline of {stream}", block=5)


def _doctor(*args: str) -> tuple[int, dict[str, Any]]:
    res = CliRunner().invoke(app, ["doctor", "--json", *args])
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, json.loads(res.stdout)


def _consolidate(rt: Runtime, user: str = "u1") -> None:
    for h in rt.raw.streams(user):
        poll_stream(rt, user, h.stream_id, head_seq=h.head_seq, flush=True)


def _kinds(report: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(p["user_id"], p["stream_id"], p["kind"]) for p in report["problems"]}


def _crash_between_commits(rt: Runtime, monkeypatch: pytest.MonkeyPatch, turns: Any) -> None:
    crashpoints.reset()
    monkeypatch.setenv("EPISODIC_CRASHPOINT", "append_after_raw:1:raise")
    with pytest.raises(InjectedCrash):
        rt.raw.append(turns)
    monkeypatch.delenv("EPISODIC_CRASHPOINT")
    crashpoints.reset()


@pytest.fixture
def rt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    return cli_home(monkeypatch, tmp_path / "home").rt


def test_healthy_store_is_ok(rt: Runtime) -> None:
    rt.raw.append(_turns(0, 40) + _turns(0, 12, "s2") + _turns(0, 9, user=ODD_USER))
    _consolidate(rt)
    _consolidate(rt, ODD_USER)
    rt.raw.append(_turns(40, 45))  # above the watermark: waiting, not a problem
    code, report = _doctor()
    assert code == 0 and report["ok"] is True, report
    assert report["streams_checked"] == 3 and report["problems"] == []
    assert _doctor("--user", ODD_USER)[1]["streams_checked"] == 1


def test_stale_head_found_and_repaired(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    rt.raw.append(_turns(0, 10) + _turns(0, 4, user="u2"))
    _crash_between_commits(rt, monkeypatch, _turns(10, 16))
    code, report = _doctor()
    assert code == 1 and report["ok"] is False
    assert _kinds(report) == {("u1", "s1", "head_behind"), ("u1", "s1", "head_count")}
    assert all(p["repairable"] for p in report["problems"])
    code, other = _doctor("--user", "u2")
    assert code == 0 and other["ok"] is True and other["streams_checked"] == 1
    code, fixed = _doctor("--repair")
    assert code == 0 and fixed["ok"] is True and fixed["problems"] == []
    assert fixed["repaired"] == [
        {"user_id": "u1", "stream_id": "s1", "head_seq": [9, 15], "n_turns": [10, 16]}
    ]
    assert _doctor() == (0, {**fixed, "repaired": []})


def test_missing_head_found_and_repaired(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    _crash_between_commits(rt, monkeypatch, _turns(0, 7, "new"))
    code, report = _doctor("--user", "u1")
    assert code == 1 and _kinds(report) == {("u1", "new", "head_missing")}
    code, fixed = _doctor("--user", "u1", "--repair")
    assert code == 0 and fixed["repaired"][0]["head_seq"] == [None, 6]


def test_seqs_handed_out_twice_are_reported_not_hidden(rt: Runtime) -> None:
    """What the old append left after a crash and more turns: two rows per seq,
    one of each pair in no episode. Not derivable, so --repair leaves exit 1."""
    rt.raw.append(_turns(0, 10))
    rows = [
        {
            "turn_id": f"dup-{i}",
            "user_id": "u1",
            "stream_id": "s1",
            "seq": i,
            "role": "user",
            "kind": "other",
            "text": f"a second turn given seq {i}",
            "event_ts": (T0 + timedelta(hours=9, minutes=i)).replace(tzinfo=None),
            "ingest_ts": T0.replace(tzinfo=None),
            "source": "old-append",
            "position": str(i),
            "meta": "{}",
        }
        for i in range(7, 10)
    ]
    rt.raw.turns.add(pa.Table.from_pylist(rows, schema=schema("raw_turns")))
    rt.raw.repair_heads("u1")  # the head counts the rows; the seqs stay doubled
    _consolidate(rt)
    code, report = _doctor("--repair")
    kinds = {p["kind"]: p for p in report["problems"]}
    assert code == 1 and report["repaired"] == []
    assert kinds["duplicate_seqs"]["sample"] == [7, 8, 9]
    assert kinds["turns_in_no_episode"]["count"] == 3
    assert not kinds["duplicate_seqs"]["repairable"]


def test_episode_whose_turns_are_missing(rt: Runtime) -> None:
    rt.raw.append(_turns(0, 10))
    _consolidate(rt)
    (ep, *_) = rt.episodes.list("u1")
    ghost = ep.model_copy(
        update={"episode_id": "ghost", "first_seq": 50, "last_seq": 51, "turn_ids": ["nope", "x"]}
    )
    rt.episodes.write([ghost])
    code, report = _doctor()
    kinds = {p["kind"] for p in report["problems"]}
    assert code == 1 and "episode_turns_missing" in kinds
    assert [p["sample"] for p in report["problems"] if p["kind"] == "episode_turns_missing"] == [
        ["nope", "x"]
    ]


def test_lost_open_buffer_is_reported(rt: Runtime) -> None:
    rt.raw.append(_turns(0, 12))
    for h in rt.raw.streams("u1"):
        poll_stream(rt, "u1", h.stream_id, head_seq=h.head_seq)  # no flush: a buffer stays open
    cp = rt.checkpoints.load("u1", "s1")
    assert cp.open_turn_ids, "the last block must still be open"
    cp.open_turn_ids = cp.open_turn_ids[:-1]  # a checkpoint that forgot a turn
    rt.checkpoints.save(cp)
    code, report = _doctor()
    lost = [p for p in report["problems"] if p["kind"] == "turns_in_no_episode"]
    assert code == 1 and lost and lost[0]["sample"] == [11]
