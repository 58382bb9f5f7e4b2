"""The reflect flow: run reflection for users whose piled-up salience is due."""

from __future__ import annotations

from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from episodic.service.memory import Memory
from episodic.service.reflect import reflect_if_due
from tasks.names import from_params, user_task_name


@task(
    name="reflect-user", task_run_name=user_task_name("reflect"), cache_policy=NO_CACHE, retries=1
)
def reflect_task(memory: Memory, user_id: str, force: bool) -> dict[str, Any]:
    return reflect_if_due(memory.rt, user_id, force=force)


@flow(name="reflect", flow_run_name=from_params("reflect"), log_prints=True)
def reflect(
    user: str | None = None, force: bool = False, memory: Memory | None = None
) -> dict[str, Any]:
    """Reflect for each user whose salience since the last reflection reached the threshold."""
    memory = memory or Memory()
    users = [user] if user else memory.rt.episodes.users()
    return {uid: reflect_task(memory, uid, force) for uid in users}
