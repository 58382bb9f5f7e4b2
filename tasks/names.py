"""Run names that never hold a user's id: <flow>-<tag>-<time> for a flow run
and <step>-<tag> for a user's task run, the tag a hash of the id. Prefect
keeps a run's name in its logs and events, which a forget cannot reach
(the runs themselves it deletes: episodic/adapters/run_history.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from episodic.models import user_tag


def run_name(flow: str, user: str | None, shard: str | None = None) -> str:
    """`consolidate-<user tag>-<UTC time>`; a shard's run `consolidate-shard-0of2-...`,
    every user's `consolidate-all-...`."""
    if user:
        who = user_tag(user)
    else:
        who = f"shard-{shard.replace('/', 'of')}" if shard else "all"
    return f"{flow}-{who}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"


def from_params(flow: str):  # type: ignore[no-untyped-def]
    def make() -> str:
        from prefect.runtime import flow_run

        params = flow_run.parameters or {}
        return run_name(flow, params.get("user"), params.get("shard"))

    return make


def user_task_name(step: str) -> Callable[[], str]:
    """The task-run name of `step` for the task's `user_id` argument."""

    def make() -> str:
        from prefect.runtime import task_run

        return f"{step}-{user_tag(str(task_run.parameters['user_id']))}"

    return make
