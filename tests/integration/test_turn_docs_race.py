"""Two users' first search documents written at once on a fresh store (a
consolidation's user threads reflecting together): both writes land and the
store ends with its text and user indexes, whichever index build lost the
commit race."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

from storage.db import Store
from storage.search import TurnDocs


def _rows(user: str) -> list[dict[str, object]]:
    at = datetime(2025, 1, 1, tzinfo=UTC)
    return [
        {
            "turn_id": f"{user}-{i}",
            "user_id": user,
            "stream_id": "s1",
            "seq": i,
            "event_ts": at,
            "doc": f"{user} said thing number {i}",
        }
        for i in range(20)
    ]


def test_first_documents_of_two_users_at_once(tmp_path: Path) -> None:
    for trial in range(6):
        store = Store(str(tmp_path / f"db{trial}"))
        start = threading.Barrier(2)
        errors: list[BaseException] = []

        def write(
            user: str,
            store: Store = store,
            start: threading.Barrier = start,
            errors: list[BaseException] = errors,
        ) -> None:
            docs = TurnDocs(store)
            start.wait()
            try:
                docs.put(_rows(user))
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=write, args=(u,)) for u in ("u1", "u2")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, (trial, errors)
        docs = TurnDocs(store)
        assert docs.count("u1") == 20 and docs.count("u2") == 20
        have = {tuple(ix.columns) for ix in docs.table.list_indices()}
        assert {("doc",), ("user_id",)} <= have, have
