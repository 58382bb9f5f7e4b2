"""Import cannot cross tenants, roll a user back, or take impossible rows
(issue 32, findings 1-2): each refusal writes nothing, says which file and
why, and leaves every other user's rows byte-identical."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from episodic.adapters.embedded import Memory
from storage.frames import frame
from storage.transfer import ImportConflict, TransferError, table_names
from tests.integration.helpers import make_memory, synthetic_stream

pytestmark = pytest.mark.usefixtures("prefect_harness")


def _turns(user: str, stream: str = "s1") -> list[dict[str, Any]]:
    return [
        {k: v for k, v in t.items() if k not in ("user_id",)}
        for t in synthetic_stream(user, stream, n_per_topic=4)
    ]


def _snapshot(memory: Memory, user: str) -> dict[str, list[dict[str, Any]]]:
    store = memory.rt.store
    return {
        name: sorted(
            frame(store, name, user)
            .drop_columns(
                [c for c in ("vector", "centroid") if c in store.table(name).schema.names]
            )
            .to_pylist(),
            key=repr,
        )
        for name in table_names()
    }


@pytest.fixture
def two_users(tmp_path: Path) -> Memory:
    memory = make_memory(tmp_path / "home")
    for user in ("mallory", "bob"):
        memory.add(user, _turns(user))
        memory.add(
            user, [{"role": "user", "text": "I live in Paris.", "ts": "2025-03-02T09:00:00Z"}]
        )
    memory.consolidate(flush=True)
    return memory


def _edit(path: Path, column: str, values: list[Any]) -> None:
    tbl = pq.read_table(path)
    n = min(len(values), tbl.num_rows)
    col = tbl[column].to_pylist()
    col[:n] = values[:n]
    i = tbl.column_names.index(column)
    pq.write_table(tbl.set_column(i, column, pa.array(col, tbl.schema.field(column).type)), path)


def test_import_refuses_rows_whose_keys_belong_to_another_user(
    two_users: Memory, tmp_path: Path
) -> None:
    memory = two_users
    out = tmp_path / "mallory"
    memory.export("mallory", out)
    bob_ids = frame(memory.rt.store, "raw_turns", "bob", ["turn_id"])["turn_id"].to_pylist()
    _edit(out / "raw_turns.parquet", "turn_id", bob_ids[:20])
    before = _snapshot(memory, "bob")
    with pytest.raises(ImportConflict, match="another user"):
        memory.import_(out)
    assert _snapshot(memory, "bob") == before
    assert memory.doctor("bob").ok


def test_an_id_written_to_end_the_sql_literal_hides_no_foreign_key(
    two_users: Memory, tmp_path: Path
) -> None:
    """lancedb's SQL rendering ended the literal at a quote after a backslash,
    so one such id beside bob's made the ownership check count nothing."""
    memory = two_users
    out = tmp_path / "mallory"
    memory.export("mallory", out)
    bob_ids = frame(memory.rt.store, "raw_turns", "bob", ["turn_id"])["turn_id"].to_pylist()
    _edit(out / "raw_turns.parquet", "turn_id", ["\\') AND 1=0) --", bob_ids[0]])
    before = _snapshot(memory, "bob")
    with pytest.raises(ImportConflict, match="another user"):
        memory.import_(out)
    assert _snapshot(memory, "bob") == before


def test_import_refuses_to_roll_a_user_back(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    memory.add("u", [{"role": "user", "text": "I live in Paris.", "ts": "2025-03-02T09:00:00Z"}])
    memory.consolidate("u", flush=True)
    old = tmp_path / "old"
    memory.export("u", old)
    memory.add("u", [{"role": "user", "text": "I moved to Berlin.", "ts": "2025-03-20T09:00:00Z"}])
    memory.consolidate("u", flush=True)
    assert {f.status for f in memory.facts("u", include_inactive=True)} >= {"superseded"}
    before = _snapshot(memory, "u")
    with pytest.raises(ImportConflict, match="moved on"):
        memory.import_(old)
    assert _snapshot(memory, "u") == before
    active = [f.text for f in memory.facts("u")]
    assert not any("Paris" in t for t in active), active
    assert memory.doctor("u").ok


def test_import_forward_and_twice_is_once(tmp_path: Path) -> None:
    source = make_memory(tmp_path / "a")
    source.add("u", _turns("u"))
    source.consolidate("u", flush=True)
    out = tmp_path / "x"
    source.export("u", out)
    target = make_memory(tmp_path / "b")
    first = target.import_(out)
    assert sum(first.inserted.values()) > 0
    again = target.import_(out)
    assert sum(again.inserted.values()) == 0
    assert _snapshot(target, "u") == _snapshot(source, "u")
    assert target.doctor("u").ok


@pytest.mark.parametrize(
    ("table", "column", "value", "reason"),
    [
        ("raw_turns", "seq", -3, "negative seq"),
        ("episodes", "n_turns", -1, "negative n_turns"),
    ],
)
def test_import_refuses_impossible_values(
    tmp_path: Path, table: str, column: str, value: int, reason: str
) -> None:
    source = make_memory(tmp_path / "a")
    source.add("u", _turns("u"))
    source.consolidate("u", flush=True)
    out = tmp_path / "x"
    source.export("u", out)
    _edit(out / f"{table}.parquet", column, [value])
    target = make_memory(tmp_path / "b")
    with pytest.raises(TransferError, match=reason):
        target.import_(out)
    assert not any(frame(target.rt.store, n, "u").num_rows for n in table_names())


def test_import_refuses_duplicate_keys(tmp_path: Path) -> None:
    source = make_memory(tmp_path / "a")
    source.add("u", _turns("u"))
    out = tmp_path / "x"
    source.export("u", out)
    path = out / "raw_turns.parquet"
    tbl = pq.read_table(path)
    pq.write_table(pa.concat_tables([tbl, tbl.slice(0, 1)]), path)
    with pytest.raises(TransferError, match="duplicate turn_id"):
        make_memory(tmp_path / "b").import_(out)


@pytest.mark.parametrize(
    "manifest",
    ["[1, 2]", '{"format": 1, "user_id": "u", "dim": "wide"}', '{"format": 1}', "{"],
)
def test_a_malformed_manifest_is_one_error(tmp_path: Path, manifest: str) -> None:
    source = make_memory(tmp_path / "a")
    source.add("u", _turns("u"))
    out = tmp_path / "x"
    source.export("u", out)
    (out / "manifest.json").write_text(manifest, encoding="utf-8")
    with pytest.raises(TransferError, match="manifest"):
        make_memory(tmp_path / "b").import_(out)
