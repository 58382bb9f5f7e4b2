"""The maintain flow: decay, archive, compact. Nightly by default."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from episodic.decay import DecayPolicy
from episodic.models import user_tag
from episodic.service.maintain import decay_user, upkeep
from episodic.service.memory import Memory
from tasks.names import from_params, user_task_name
from tasks.report import publish_table


@task(name="decay-user", task_run_name=user_task_name("decay"), cache_policy=NO_CACHE)
def decay_task(
    memory: Memory, user_id: str, tau_hours: float, floor: float, now: datetime | None = None
) -> list[dict[str, Any]]:
    return decay_user(memory.rt, user_id, DecayPolicy(tau_hours=tau_hours, floor=floor), now)


@task(name="table-upkeep", cache_policy=NO_CACHE)
def upkeep_task(memory: Memory, keep_hours: float) -> list[dict[str, Any]]:
    return upkeep(memory.rt, timedelta(hours=keep_hours))


@flow(name="maintain", flow_run_name=from_params("maintain"), log_prints=True)
def maintain(
    user: str | None = None,
    tau_hours: float = 168.0,
    floor: float = 0.5,
    keep_versions_hours: float = 1.0,
    now: datetime | None = None,
    memory: Memory | None = None,
) -> dict[str, Any]:
    """Decay salience by time since last recall, archive below the floor, compact tables.

    `now` defaults to the wall clock; a replay or a test may set it."""
    memory = memory or Memory()
    users = [user] if user else memory.rt.episodes.users()
    changed: list[dict[str, Any]] = []
    for uid in users:
        changed.extend(decay_task(memory, uid, tau_hours, floor, now))
    tables = upkeep_task(memory, keep_versions_hours)
    archived = sum(1 for r in changed if r["action"] == "archived")
    publish_table(
        "maintain-decay",
        [{**r, "user": user_tag(r["user"])} for r in changed[:500]]  # Prefect's: no id
        or [{"action": "nothing decayed"}],
        f"{len(changed)} items decayed, {archived} archived",
    )
    publish_table("maintain-tables", tables, "compaction and version cleanup")
    return {"decayed": len(changed) - archived, "archived": archived, "tables": tables}
