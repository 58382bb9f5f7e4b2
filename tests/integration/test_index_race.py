"""Two processes that make a table's first indexes at once (an ingest flow
and a consolidate flow of a new user, started together): the one whose
commit is preempted finds the index made and goes on, instead of failing
its run. Two stores on one directory, released together by a barrier,
stand for the two processes: LanceDB builds outside the GIL."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

from episodic.models import now_utc
from storage.codec import to_row
from storage.db import Store
from storage.rows import StreamHead
from tests.integration.helpers import make_memory

ROUNDS = 8
COMPACTIONS = 4
FRAGMENTS = 100
UPDATE_EVERY_S = 0.03  # a consolidation's writes come in bursts, not a hot loop


def _make(store: Store, gate: threading.Barrier, errors: list[BaseException]) -> None:
    gate.wait()
    try:
        store.ensure_indexes()
    except Exception as e:  # noqa: BLE001 - the test's assertion names it
        errors.append(e)


def test_stores_making_the_same_first_indexes_at_once_all_succeed(tmp_path: Path) -> None:
    for r in range(ROUNDS):
        memory = make_memory(tmp_path / f"home{r}")
        memory.add(
            "u1", [{"role": "user", "text": f"turn {i}", "ts": 1_700_000_000 + i} for i in range(3)]
        )
        stores = [memory.rt.store, Store(memory.rt.store.uri)]
        gate = threading.Barrier(len(stores))
        errors: list[BaseException] = []
        threads = [threading.Thread(target=_make, args=(s, gate, errors)) for s in stores]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [], f"round {r}: {errors[0]!r}"
        for s in stores:
            assert s.keep_scalar_indexes(fold_at=None) == {}  # every index is there


def test_a_compaction_beside_another_store_updating_the_rows_succeeds(tmp_path: Path) -> None:
    """The nightly maintain compacts while a consolidation updates rows: a
    compaction preempted by an update is done again on the newer version."""
    store = make_memory(tmp_path / "home").rt.store
    heads: list[StreamHead] = []
    other = Store(store.uri)
    done = threading.Event()
    errors: list[BaseException] = []

    def update() -> None:
        n = 0
        while not done.is_set():
            if heads:
                other.update_columns("streams", [{"key": heads[n % len(heads)].key, "head_seq": n}])
            n += 1
            done.wait(UPDATE_EVERY_S)

    writer = threading.Thread(target=update)
    writer.start()
    try:
        for r in range(COMPACTIONS):
            for i in range(FRAGMENTS):  # a fragment each, as many small writes leave them
                head = StreamHead("u1", f"s{r}-{i}", 0, 1, None)
                store.upsert("streams", [to_row(head, store.dim, updated_at=now_utc())])
                heads.append(head)
            try:
                store.upkeep("streams", timedelta(hours=1))
            except Exception as e:  # noqa: BLE001 - the assertion below names it
                errors.append(e)
    finally:
        done.set()
        writer.join()
    assert errors == []
    assert store.count("streams") == len(heads)
