"""Merges from several threads into one Store: Prefect runs a flow's tasks
in threads, and two of them once merged through the one dataset cached for
reads, which panicked in pylance (PyBorrowMutError) and crashed the run."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path

from storage.db import Store

T0 = datetime(2026, 1, 1)


def test_threads_merging_and_reading_one_table_all_land(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "db"))
    users = [f"u{i}" for i in range(4)]
    store.upsert("reflection_marks", [{"user_id": u, "last_reflected_at": T0} for u in users])

    def work(i: int) -> int:
        got = 0
        for step in range(1, 41):
            at = T0 + timedelta(minutes=step)
            if i % 2:
                store.upsert("reflection_marks", [{"user_id": users[i], "last_reflected_at": at}])
            else:
                row = {"user_id": users[i], "last_reflected_at": at}
                got += store.update_columns("reflection_marks", [row])
            store.dataset(store.table("reflection_marks")).count_rows()
        return got

    with ThreadPoolExecutor(4) as pool:
        updated = list(pool.map(work, range(4)))

    assert updated == [40, 0, 40, 0]
    rows = store.table("reflection_marks").to_arrow().to_pylist()
    assert sorted(r["user_id"] for r in rows) == users
    assert {r["last_reflected_at"] for r in rows} == {T0 + timedelta(minutes=40)}
