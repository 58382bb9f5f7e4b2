"""The model-use ledger: one row per (consolidate run, user) with what that
user's share of the run asked the model: calls, cache hits, tokens, fallbacks,
seconds waiting and cost from the price table. Counts and a run name only,
never content; a forget deletes the user's rows with the rest."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from episodic.models import RunUsage, now_utc, stable_id
from storage import filters
from storage.codec import to_aware, to_naive
from storage.db import Store

TABLE = "llm_usage"
COUNTS = ("calls", "cache_hits", "input_tokens", "output_tokens", "fallbacks", "failures")
SUMMED = COUNTS[:4]  # what a user's total over runs adds up (UsageView)


def schema() -> pa.Schema:
    return pa.schema(
        [
            ("key", pa.string()),
            ("user_id", pa.string()),
            ("run", pa.string()),
            ("at", pa.timestamp("us")),
            ("provider", pa.string()),
            ("model", pa.string()),
            *((c, pa.int64()) for c in COUNTS),
            ("wait_s", pa.float64()),
            ("cost_usd", pa.float64()),  # null: the model has no published price
        ]
    )


class Ledger:
    def __init__(self, store: Store) -> None:
        self.table = store.declared(TABLE, schema())

    def record(self, rows: list[RunUsage]) -> int:
        """One commit for a run's users; a retried run (same name) overwrites its rows."""
        if not rows:
            return 0
        data = [
            {
                "key": stable_id("llm-usage", r.run, r.user_id),
                **r.model_dump(exclude={"at"}),
                "at": to_naive(r.at or now_utc()),
            }
            for r in rows
        ]
        (
            self.table.merge_insert("key")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(pa.Table.from_pylist(data, schema=schema()))
        )
        return len(rows)

    def runs(self, user_id: str, limit: int = 20) -> list[RunUsage]:
        """The user's most recent runs, newest first."""
        rows: list[dict[str, Any]] = (
            self.table.search().where(filters.user(user_id).lance).limit(None).to_list()
        )
        rows.sort(key=lambda r: r["at"], reverse=True)
        return [
            RunUsage(**{k: v for k, v in r.items() if k != "key"} | {"at": to_aware(r["at"])})
            for r in rows[:limit]
        ]
