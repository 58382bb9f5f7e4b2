"""The reflect flow: run reflection for users whose piled-up salience is due."""

from __future__ import annotations

from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from tasks.names import from_params
from tasks.reflect import reflect_if_due
from tasks.runtime import get_runtime


@task(name="reflect-user", task_run_name="reflect-{user_id}", cache_policy=NO_CACHE, retries=1)
def reflect_task(user_id: str, force: bool) -> dict[str, Any]:
    return reflect_if_due(user_id, force=force)


@flow(name="reflect", flow_run_name=from_params("reflect"), log_prints=True)
def reflect(user: str | None = None, force: bool = False) -> dict[str, Any]:
    """Reflect for each user whose salience since the last reflection reached the threshold."""
    rt = get_runtime()
    users = [user] if user else rt.episodes.users()
    return {uid: reflect_task(uid, force) for uid in users}
