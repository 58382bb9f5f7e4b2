"""`episodic export` / `import` through the CLI on real LanceDB stores:
export, import into a new home, export again gives the same Parquet tables
(sorted by key); importing twice equals importing once; an import that would
collide with other raw turns of the user is refused. Every command reads
`--json`, never a table a terminal could wrap."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from flows.consolidate import consolidate
from flows.reflect import reflect
from storage.transfer import key_of, table_names
from tests.integration.cli_support import cli as _cli
from tests.integration.cli_support import cli_home, refused
from tests.integration.helpers import synthetic_stream, write_jsonl

pytestmark = pytest.mark.usefixtures("prefect_harness")


def _tables(d: Path) -> dict[str, Any]:
    return {n: pq.read_table(d / f"{n}.parquet").sort_by(key_of(n)) for n in table_names()}


@pytest.fixture
def source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with two users' turns consolidated, facts merged, a reflection
    written and one rejected line: something in every table of u1."""
    home = tmp_path / "a"
    turns = synthetic_stream("u1", "s1") + synthetic_stream("u1", "s2") + synthetic_stream("u2")
    turns += [{"user_id": "u1", "stream_id": "s1", "role": "user", "text": t, "ts": ts}
              for t, ts in (("I live in Paris.", "2025-03-02T09:00:00+00:00"),
                            ("I moved to Berlin.", "2025-03-09T09:00:00+00:00"))]  # fmt: skip
    path = write_jsonl(tmp_path / "t.jsonl", turns)
    with path.open("a", encoding="utf-8") as f:
        f.write('{"user_id": "u1", "stream_id": "s1", "role": "robot", "text": "x"}\n')
    m = cli_home(monkeypatch, home)
    _cli("ingest", str(path), "--json", code=1)  # the one rejected line
    consolidate(flush=True, memory=m)
    reflect(user="u1", force=True, memory=m)
    return home


def _u1_memory() -> dict[str, Any]:
    """What the CLI shows of u1's memory on the current home."""
    return {
        "episodes": _cli("episodes", "--user", "u1", "--json"),
        "facts": _cli("facts", "--user", "u1", "--all", "--json"),
        "rejected": _cli("rejected", "--user", "u1", "--json"),
        "reflections": sorted(
            _cli("reflections", "--user", "u1", "--all", "--json"), key=lambda r: r["reflection_id"]
        ),
    }


def test_round_trip_is_identical_and_import_is_idempotent(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "x1", tmp_path / "x2"
    out = _cli("export", "--user", "u1", "--out", str(first), "--json")
    before = _u1_memory()
    # something in every table a user's memory lives in
    for name in ("raw_turns", "streams", "turn_vectors", "rejected_input", "episodes",
                 "facts", "fact_history", "reflections", "segmenter_state"):  # fmt: skip
        assert out["rows"][name] > 0, name
    exported = _tables(first)
    assert all(set(t["user_id"].to_pylist()) <= {"u1"} for t in exported.values())

    cli_home(monkeypatch, tmp_path / "b")
    once = _cli("import", str(first), "--json")
    assert once["inserted"] == {n: k for n, k in out["rows"].items() if k}
    twice = _cli("import", str(first), "--json")
    assert sum(twice["inserted"].values()) == 0
    assert twice["updated"] == once["inserted"]
    _cli("export", "--user", "u1", "--out", str(second), "--json")
    after = _u1_memory()
    refused("episodes", "--user", "u2", "--json")  # only u1 came over
    again = _tables(second)
    for name in table_names():
        assert again[name].equals(exported[name]), name
    assert after == before


def test_import_refuses_to_mix_raw_logs(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _cli("export", "--user", "u1", "--out", str(tmp_path / "x"), "--json")
    other = write_jsonl(tmp_path / "o.jsonl", synthetic_stream("u1", "s1", n_per_topic=1))
    rt = cli_home(monkeypatch, tmp_path / "b").rt
    _cli("ingest", str(other), "--json")
    line = refused("import", str(tmp_path / "x"), "--json", code=2)
    # turns identical to exported ones (same stream, position, text) share ids
    assert re.search(r"already holds [1-4] [a-z ]*of user 'u1'", line)
    assert rt.raw.count("u1") == 4  # nothing written
    assert "manifest.json" in refused("import", str(tmp_path / "nowhere"), "--json", code=2)
    (tmp_path / "a-file").write_text("mine\n")
    line = refused("export", "--user", "u1", "--out", str(tmp_path / "a-file"), "--json", code=2)
    assert "a-file: cannot write the export there" in line
    assert (tmp_path / "a-file").read_text() == "mine\n"


def test_unknown_user_exits_1_on_user_scoped_reads(source: Path, tmp_path: Path) -> None:
    for args in (
        ["episodes"],
        ["facts"],
        ["facts", "--all"],
        ["history", "f0"],
        ["rejected"],
        ["status"],
        ["export", "--out", str(tmp_path / "x")],
    ):
        line = refused(*args, "--user", "nobody", "--json")
        assert line.startswith("error: no user 'nobody'"), args
    assert not (tmp_path / "x").exists()
    assert [s["stream_id"] for s in _cli("status", "--user", "u2", "--json")] == ["s1"]


def test_ingest_json_lists_each_rejected_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [json.dumps(t) for t in synthetic_stream("u1", "s1", n_per_topic=1)]
    lines[1] = "{not json"
    lines.insert(3, json.dumps({"user_id": "u1", "stream_id": "s1", "role": "robot", "text": "x"}))
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cli_home(monkeypatch, tmp_path / "h")
    res = _cli("ingest", str(path), "--json", code=1)
    report = json.loads(res.stdout)
    assert report["rejected"] == 2 and report["accepted"] == 3
    assert [r["line"] for r in report["rejected_lines"]] == [2, 4]
    assert "robot" in report["rejected_lines"][1]["reason"]
    # the line that names u1 is kept under u1, whole (the broken one names no user)
    kept = _cli("rejected", "--user", "u1", "--json")
    assert [(r["line"], r["reason"]) for r in kept] == [
        (r["line"], r["reason"]) for r in report["rejected_lines"][1:]
    ]
    assert json.loads(kept[0]["raw"])["role"] == "robot"
