"""A follower reads only what a table gained since its last poll, and the
user's rows whole after anything that can remove a row (real LanceDB)."""

from __future__ import annotations

from pathlib import Path

from storage import filters
from storage.follow import Follower
from tests.integration.helpers import make_memory


def _turns(n: int, at: int = 0) -> list[dict[str, object]]:
    return [
        {"role": "user", "text": f"turn number {i}", "ts": 1_700_000_000 + i, "id": f"t{i}"}
        for i in range(at, at + n)
    ]


def test_polls_read_new_fragments_then_everything_after_a_delete(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    store = memory.rt.store
    memory.add("u1", _turns(3))
    memory.add("u2", _turns(2))
    f = Follower(store, "raw_turns", filters.user("u1"), ("turn_id", "text"))
    first = f.poll()
    assert first is not None and first.whole
    assert sorted(first.rows.column("text").to_pylist()) == [f"turn number {i}" for i in range(3)]
    assert f.poll() is None  # nothing changed: one version read, no rows

    memory.add("u1", _turns(2, at=3))
    memory.add("u2", _turns(1, at=9))
    gained = f.poll()
    assert gained is not None and not gained.whole
    assert sorted(gained.rows.column("text").to_pylist()) == ["turn number 3", "turn number 4"]

    store.delete("raw_turns", filters.eq("text", "turn number 1"))
    after = f.poll()
    assert after is not None and after.whole  # a delete: the user's rows whole
    assert sorted(after.rows.column("text").to_pylist()) == [
        "turn number 0", "turn number 2", "turn number 3", "turn number 4",
    ]  # fmt: skip


def test_a_compaction_that_rewrites_an_index_is_followed(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    store = memory.rt.store
    for i in range(4):
        memory.add("u1", _turns(1, at=i))
    store.ensure_indexes()
    f = Follower(store, "raw_turns", filters.user("u1"), ("turn_id", "text"))
    assert f.poll() is not None
    memory.add("u1", _turns(1, at=4))
    store.table("raw_turns").optimize()  # compacts the fragments, rewrites the indexes
    got = f.poll()
    assert got is not None
    assert sorted(got.rows.column("text").to_pylist()) == [f"turn number {i}" for i in range(5)]
