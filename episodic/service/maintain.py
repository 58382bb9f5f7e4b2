"""Maintenance: retrieval-driven decay of episodes and facts, archival below
a floor (never deletion), and table upkeep (compaction, index refresh, old
versions cleaned up)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from episodic.crashpoints import crashpoint
from episodic.decay import DecayItem, DecayPolicy, plan_decay
from episodic.models import now_utc
from episodic.service.runtime import Runtime


def decay_user(
    rt: Runtime, user_id: str, policy: DecayPolicy, now: datetime | None = None
) -> list[dict[str, Any]]:
    now = now or now_utc()
    rows: list[dict[str, Any]] = []
    eps = rt.episodes.list(user_id)
    items = [
        DecayItem(
            item_id=e.episode_id,
            salience=float(e.salience),
            recall_count=e.recall_count,
            last_access=e.last_recalled_at or e.closed_at,
            strength=e.strength,
        )
        for e in eps
        if e.status == "closed" and e.salience_source
    ]
    changes = plan_decay(items, now, policy)
    update: dict[str, dict[str, Any]] = {}
    for c in changes:
        update[c.item_id] = {
            "strength": c.new_strength,
            "status": "archived" if c.archive else "closed",
        }
        rows.append(
            {
                "user": user_id,
                "kind": "episode",
                "id": c.item_id[:12],
                "strength": f"{c.old_strength:.3f} -> {c.new_strength:.3f}",
                "effective_salience": round(c.effective, 3),
                "action": "archived" if c.archive else "decayed",
            }
        )
    rt.episodes.update(user_id, update)
    crashpoint("after_decay")
    return rows


def upkeep(rt: Runtime, keep_versions: timedelta = timedelta(hours=1)) -> list[dict[str, Any]]:
    """Compact fragments, fold new rows into the indexes, drop old versions."""
    rows: list[dict[str, Any]] = []
    rt.store.ensure_indexes()
    # every table: the search documents and receipts grow by a commit per write too
    for name in rt.store.existing_tables():
        st = rt.store.upkeep(name, keep_versions, between=lambda: crashpoint("before_table_upkeep"))
        crashpoint("after_table_upkeep")
        rows.append(
            {
                "table": name,
                "rows": st["rows"],
                "versions": "{} -> {}".format(*st["versions"]),
                "fragments": "{} -> {}".format(*st["fragments"]),
            }
        )
    return rows
