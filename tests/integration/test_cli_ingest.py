"""`episodic ingest` through the CLI: idempotent, corrupt lines quarantined
with a failing exit status, a grown file adds only its tail; and, as a
property over RawLog, ingesting twice equals ingesting once."""

from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from episodic.adapters.cli.main import app
from episodic.service.ingest import ingest_file
from episodic.service.runtime import Runtime
from storage.db import Store
from storage.raw import RawLog
from tests.integration.cli_support import cli_home

T0 = datetime(2025, 5, 1, 8, 0, tzinfo=UTC)


def _line(i: int, user: str = "u1", stream: str = "s1") -> str:
    role = "user" if i % 2 == 0 else "assistant"
    ts = (T0 + timedelta(minutes=i)).isoformat()
    return json.dumps({"user_id": user, "stream_id": stream, "role": role,
                       "text": f"turn {i}: the deploy pipeline step {i}", "ts": ts})  # fmt: skip


def _ingest(path: Path) -> tuple[int, dict[str, Any]]:
    res = CliRunner().invoke(app, ["ingest", str(path), "--json"])
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, json.loads(res.stdout)


@pytest.fixture
def rt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    return cli_home(monkeypatch, tmp_path / "home").rt


def test_same_file_twice_adds_nothing(rt: Runtime, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(_line(i) + "\n" for i in range(30)), encoding="utf-8")
    code, first = _ingest(path)
    assert code == 0 and first["accepted"] == 30 and first["rejected"] == 0
    rows = rt.raw.count()
    code, second = _ingest(path)
    assert code == 0
    assert second["accepted"] == 0 and second["duplicates"] == 30
    assert rt.raw.count() == rows == 30
    seqs = [t.seq for t in rt.raw.read("u1", "s1", -1, 1000)]
    assert seqs == list(range(30))


def test_corrupt_lines_are_quarantined_and_fail_the_exit_status(
    rt: Runtime, tmp_path: Path
) -> None:
    lines = [_line(i) for i in range(100)]
    corrupt = {7: '{"user_id": "u1", "role": "user", "text": "cut off', 50: "not json at all",
               93: json.dumps({"user_id": "u1", "stream_id": "s1", "role": "robot",
                               "text": "x", "ts": T0.isoformat()})}  # fmt: skip
    for i, bad in corrupt.items():
        lines[i] = bad
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, rep = _ingest(path)
    assert code == 1
    assert rep["accepted"] == 97 and rep["rejected"] == 3
    assert rt.raw.count() == 97
    quarantined = rt.raw.rejected()
    assert len(quarantined) == 3
    kept = json.dumps(quarantined, default=str)
    assert "not json at all" in kept and "cut off" in kept  # kept whole, not dropped
    # the good turns around a bad line keep their order, without holes in seq
    seqs = [t.seq for t in rt.raw.read("u1", "s1", -1, 1000)]
    assert seqs == list(range(97))
    # a rerun quarantines nothing twice and accepts nothing twice
    code, again = _ingest(path)
    assert code == 1 and again["accepted"] == 0
    assert rt.raw.count() == 97 and len(rt.raw.rejected()) == 3


def test_grown_file_adds_only_the_tail(rt: Runtime, tmp_path: Path) -> None:
    path = tmp_path / "grow.jsonl"
    path.write_text("".join(_line(i) + "\n" for i in range(40)), encoding="utf-8")
    assert _ingest(path)[1]["accepted"] == 40
    before = {t.turn_id: t.seq for t in rt.raw.read("u1", "s1", -1, 1000)}
    with path.open("a", encoding="utf-8") as f:
        f.write("".join(_line(i) + "\n" for i in range(40, 55)))
    code, rep = _ingest(path)
    assert code == 0 and rep["accepted"] == 15 and rep["duplicates"] == 40
    after = rt.raw.read("u1", "s1", -1, 1000)
    assert [t.seq for t in after] == list(range(55))
    assert {t.turn_id: t.seq for t in after if t.turn_id in before} == before  # old rows untouched
    assert [t.text for t in after[40:]] == [f"turn {i}: the deploy pipeline step {i}"
                                            for i in range(40, 55)]  # fmt: skip


# ---- property: ingest twice equals ingest once ---------------------------------------

turn_rows = st.lists(
    st.tuples(
        st.sampled_from(["u1", "u2"]),
        st.sampled_from(["s1", "s2"]),
        st.sampled_from(["user", "assistant", "tool"]),
        st.text(min_size=1, max_size=40).filter(lambda s: s.strip() != ""),
        st.integers(min_value=0, max_value=10_000),
    ),
    min_size=1,
    max_size=25,
)


def _state(raw: RawLog) -> list[tuple[Any, ...]]:
    out = []
    for h in raw.streams():
        for t in raw.read(h.user_id, h.stream_id, -1, h.head_seq):
            out.append((t.user_id, t.stream_id, t.seq, t.turn_id, t.role, t.text, t.event_ts))
    heads = sorted((h.user_id, h.stream_id, h.head_seq) for h in raw.streams())
    return sorted(out) + [("heads", *x) for x in heads]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=turn_rows, split=st.integers(min_value=0, max_value=25))
def test_ingest_twice_equals_ingest_once(rows: list[tuple[Any, ...]], split: int) -> None:
    lines = [
        json.dumps(
            {
                "user_id": u,
                "stream_id": s,
                "role": r,
                "text": x,
                "ts": (T0 + timedelta(seconds=sec)).isoformat(),
            }
        )  # fmt: skip
        for u, s, r, x, sec in rows
    ]
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "in.jsonl"  # one path: turn ids hash the source
        whole = "".join(line + "\n" for line in lines)
        # twice: a prefix first (the file was still growing), then all, then all again
        twice = RawLog(Store(str(Path(d) / "twice"), dim=8))
        src.write_text("".join(line + "\n" for line in lines[:split]), encoding="utf-8")
        if split:
            ingest_file(twice, src, "jsonl")
        src.write_text(whole, encoding="utf-8")
        ingest_file(twice, src, "jsonl")
        last = ingest_file(twice, src, "jsonl")
        once = RawLog(Store(str(Path(d) / "once"), dim=8))
        first = ingest_file(once, src, "jsonl")
        assert last.accepted == 0 and last.rejected == first.rejected
        assert _state(twice) == _state(once)
        assert first.accepted + first.rejected == len(lines)


def test_rejected_input_is_listed_under_the_user_it_was_sent_for(
    rt: Runtime, tmp_path: Path
) -> None:
    """A user whose every line was refused is still a user to `rejected`;
    a refused line that names its user is kept under that user, not "default"."""
    bad = tmp_path / "allbad.jsonl"
    bad.write_text('{"role": "user"}\nnot json\n', encoding="utf-8")
    res = CliRunner().invoke(
        app, ["ingest", str(bad), "--user", "carol", "--format", "jsonl", "--json"]
    )
    assert res.exit_code == 1 and json.loads(res.stdout)["rejected"] == 2
    named = tmp_path / "named.jsonl"
    named.write_text(
        json.dumps({"user_id": "bob", "stream_id": "b1", "text": "no role"}) + "\n"
        + json.dumps({"user_id": "bob", "role": "user", "text": "x", "meta": [1]}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    assert CliRunner().invoke(app, ["ingest", str(named), "--json"]).exit_code == 1
    for user, n in (("carol", 2), ("bob", 2)):
        res = CliRunner().invoke(app, ["rejected", "--user", user, "--json"])
        assert res.exit_code == 0, res.output
        assert len(json.loads(res.stdout)) == n, (user, res.stdout)
    listed = json.loads(CliRunner().invoke(app, ["rejected", "--user", "bob", "--json"]).stdout)
    assert {r["stream_id"] for r in listed} == {"b1", "named"}
    assert "line 1: missing field: role" in {r["reason"] for r in listed}


def test_a_blank_user_or_stream_is_a_usage_error(rt: Runtime, tmp_path: Path) -> None:
    """`--user ""` (an unset variable) is a bad argument: exit 2 and nothing
    written, not every line quarantined under "default"."""
    path = tmp_path / "t.jsonl"
    path.write_text(_line(0) + "\n", encoding="utf-8")
    for option in ("--user", "--stream"):
        res = CliRunner().invoke(app, ["ingest", str(path), option, "  ", "--json"])
        assert res.exit_code == 2 and f"{option} is blank" in res.stderr, res.output
    assert rt.raw.count() == 0 and rt.raw.rejected() == []
