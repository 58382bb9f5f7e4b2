"""The stream head never disagrees with raw for long: a writer that dies
between the raw commit and the head commit leaves a head behind, and the next
append (also one of duplicates only) or the next `streams()` repairs it before
a seq is handed out twice. Real LanceDB in tmp_path; the crash is injected in
process (`EPISODIC_CRASHPOINT=...:raise`); the process-level trials are in
test_reliability_ingest_crash.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from episodic import crashpoints
from episodic.crashpoints import InjectedCrash
from episodic.models import TurnIn
from storage.db import Store
from storage.raw import RawLog
from tests.integration.helpers import turn_ins


@pytest.fixture
def raw(tmp_path: Path) -> RawLog:
    return RawLog(Store(str(tmp_path / "lancedb")))


@pytest.fixture
def crash_at(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    def arm(spec: str) -> None:
        crashpoints.reset()
        monkeypatch.setenv("EPISODIC_CRASHPOINT", spec)

    yield arm
    crashpoints.reset()


def _seqs(raw: RawLog, stream: str = "s1", user: str = "u1") -> list[int]:
    tbl = raw.seq_table(user)
    pairs = zip(tbl["stream_id"].to_pylist(), tbl["seq"].to_pylist(), strict=True)
    return sorted(seq for sid, seq in pairs if sid == stream)


def _stored_head(raw: RawLog, stream: str = "s1", user: str = "u1") -> tuple[int, int] | None:
    """The head row as stored, without the check `streams()` makes."""
    for h in raw.stored_heads(user):
        if h.stream_id == stream:
            return h.head_seq, h.n_turns
    return None


def _die_between_commits(raw: RawLog, crash_at, turns: list[TurnIn]) -> None:  # type: ignore[no-untyped-def]
    crash_at("append_after_raw:1:raise")
    with pytest.raises(InjectedCrash):
        raw.append(turns)
    crash_at("")


def test_reingest_after_a_crash_between_commits_repairs_the_head(raw: RawLog, crash_at) -> None:  # type: ignore[no-untyped-def]
    raw.append(turn_ins(0, 100))
    _die_between_commits(raw, crash_at, turn_ins(100, 200))
    assert _stored_head(raw) == (99, 100), "the crash must leave the head behind raw"
    again = raw.append(turn_ins(100, 200))  # every turn a duplicate: the old early return
    assert again.accepted == 0 and again.duplicates == 100
    assert _stored_head(raw) == (199, 200)
    raw.append(turn_ins(200, 250))
    assert _seqs(raw) == list(range(250))
    assert _stored_head(raw) == (249, 250)


def test_new_turns_after_a_crash_take_fresh_seqs(raw: RawLog, crash_at) -> None:  # type: ignore[no-untyped-def]
    raw.append(turn_ins(0, 10))
    _die_between_commits(raw, crash_at, turn_ins(10, 20))
    raw.append(turn_ins(20, 30))  # no re-ingest: new turns straight away
    assert _seqs(raw) == list(range(30))
    raw.append(turn_ins(10, 20))
    assert _seqs(raw) == list(range(30)) and _stored_head(raw) == (29, 30)


def test_crash_on_the_first_append_of_a_stream(raw: RawLog, crash_at) -> None:  # type: ignore[no-untyped-def]
    _die_between_commits(raw, crash_at, turn_ins(0, 5, "fresh"))
    assert _stored_head(raw, "fresh") is None
    raw.append(turn_ins(5, 8, "fresh"))
    assert _seqs(raw, "fresh") == list(range(8)) and _stored_head(raw, "fresh") == (7, 8)


def test_streams_repairs_a_stale_head_without_a_new_append(raw: RawLog, crash_at) -> None:  # type: ignore[no-untyped-def]
    raw.append(turn_ins(0, 10) + turn_ins(0, 4, "s2") + turn_ins(0, 3, "s1", user="u2"))
    _die_between_commits(raw, crash_at, turn_ins(10, 15) + turn_ins(4, 6, "s2"))
    heads = {h.stream_id: (h.head_seq, h.n_turns) for h in raw.streams("u1")}
    assert heads == {"s1": (14, 15), "s2": (5, 6)}
    assert _stored_head(raw, "s1") == (14, 15)
    assert _stored_head(raw, "s1", "u2") == (2, 3), "another user's head is untouched"


def test_one_batch_over_many_streams(raw: RawLog, crash_at) -> None:  # type: ignore[no-untyped-def]
    first = [t for s in range(30) for t in turn_ins(0, 3, f"s{s}")]
    raw.append(first)
    _die_between_commits(
        raw, crash_at, [t for s in range(0, 30, 2) for t in turn_ins(3, 5, f"s{s}")]
    )
    raw.append([t for s in range(30) for t in turn_ins(5, 6, f"s{s}")])
    for s in range(30):
        n = 6 if s % 2 == 0 else 4
        assert _seqs(raw, f"s{s}") == list(range(n)), s
        assert _stored_head(raw, f"s{s}") == (n - 1, n)


def test_heads_table_rolled_back_a_version(raw: RawLog) -> None:
    """The issue's reproduction: every table but raw_turns back to before the
    last ingest is what a crash between the commits leaves."""
    raw.append(turn_ins(0, 300))
    version = raw.heads.version
    raw.append(turn_ins(300, 600))
    raw.heads.restore(version)
    raw.append(turn_ins(300, 600))
    raw.append(turn_ins(600, 900))
    assert _seqs(raw) == list(range(900))
    assert [(h.head_seq, h.n_turns) for h in raw.streams("u1")] == [(899, 900)]


def test_repair_heads_reports_what_it_rewrote(raw: RawLog, crash_at) -> None:  # type: ignore[no-untyped-def]
    raw.append(turn_ins(0, 4))
    _die_between_commits(raw, crash_at, turn_ins(4, 9))
    repairs = raw.repair_heads("u1")
    assert [r.as_dict() for r in repairs] == [
        {"user_id": "u1", "stream_id": "s1", "head_seq": [3, 8], "n_turns": [4, 9]}
    ]
    assert raw.repair_heads("u1") == []
