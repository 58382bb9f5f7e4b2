"""Store.keep_scalar_indexes: every table's merge key gets a BTree index once
the table has rows, rows appended later are folded in, and a merge through the
index still finds every row, indexed or not (a merge without the index joined
the whole table: +80 MB and 0.3 s for 500 episodes at 200k turns)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from storage.db import Store, scalar_columns

T0 = datetime(2026, 1, 1)


def _marks(users: list[str], at: datetime) -> list[dict[str, object]]:
    return [{"user_id": u, "last_reflected_at": at} for u in users]


def _unindexed(store: Store, name: str, column: str) -> int:
    tbl = store.table(name)
    ix = {i.columns[0]: i.name for i in tbl.list_indices()}
    return int(tbl.index_stats(ix[column]).num_unindexed_rows)


def test_merge_keys_are_indexed_and_appends_folded_in(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "db"))
    assert store.keep_scalar_indexes() == {}  # no rows anywhere: nothing to index
    first = [f"u{i}" for i in range(5)]
    store.upsert("reflection_marks", _marks(first, T0))
    made = store.keep_scalar_indexes(fold_at=3)
    assert made == {"reflection_marks": list(scalar_columns("reflection_marks"))}
    assert "history_id" in scalar_columns("fact_history")  # the key, beside the prefilters

    later = [f"v{i}" for i in range(4)]
    store.upsert("reflection_marks", _marks(later, T0))
    assert _unindexed(store, "reflection_marks", "user_id") == 4
    assert store.keep_scalar_indexes(fold_at=5) == {}  # under the threshold: left
    assert store.keep_scalar_indexes(fold_at=3) == {"reflection_marks": ["folded:user_id_idx"]}
    assert _unindexed(store, "reflection_marks", "user_id") == 0

    # one merge over indexed rows and rows appended after the fold
    newest = [f"w{i}" for i in range(2)]
    store.upsert("reflection_marks", _marks(newest, T0))
    at = T0 + timedelta(days=1)
    changed = store.update_columns("reflection_marks", _marks(first[:2] + later + newest, at))
    assert changed == 8
    rows = {
        r["user_id"]: r["last_reflected_at"]
        for r in store.table("reflection_marks").to_arrow().to_pylist()
    }
    assert len(rows) == 11  # nothing stored twice
    assert {u for u, t in rows.items() if t == at} == set(first[:2] + later + newest)
