"""Two processes that make a table's first indexes at once (an ingest flow
and a consolidate flow of a new user, started together): the one whose
commit is preempted finds the index made and goes on, instead of failing
its run. Two stores on one directory, released together by a barrier,
stand for the two processes: LanceDB builds outside the GIL."""

from __future__ import annotations

import threading
from pathlib import Path

from storage.db import Store
from tests.integration.helpers import make_memory

ROUNDS = 8


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
