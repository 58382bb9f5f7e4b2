"""How a face runs a consolidation for the service: the consolidate flow in
this process (on Prefect's ephemeral API, or the server PREFECT_API_URL
names), or the `consolidate` deployment on that server's workers."""

from __future__ import annotations

import json
from typing import Any, cast

from episodic.service.memory import Memory


def run_flow(
    memory: Memory, *, user_id: str | None, flush: bool, shard: str | None
) -> dict[str, Any]:
    """The consolidate flow, here and now, on this memory; its summary."""
    from flows.consolidate import consolidate

    summary = consolidate(user=user_id, flush=flush, shard=shard, memory=memory)
    return cast(dict[str, Any], json.loads(json.dumps(summary, default=str)))


def run_deployment(
    memory: Memory, *, user_id: str | None, flush: bool, shard: str | None
) -> dict[str, Any]:
    """A run of the `consolidate` deployment, queued for a worker: its id."""
    from prefect.client.schemas.objects import FlowRun
    from prefect.deployments import run_deployment as queue

    params: dict[str, Any] = {"user": user_id, "flush": flush, "shard": shard}
    # from sync code Prefect's async_dispatch returns the FlowRun itself
    run = cast(FlowRun, queue("consolidate/consolidate", parameters=params, timeout=0))
    return {"run_id": str(run.id), "mode": "deployment"}
