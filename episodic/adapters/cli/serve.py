"""Serve the flows with their schedules from one process (Prefect's `serve`):
the one-machine alternative to a work pool and `prefect deploy`. The
deployments, entrypoints and schedules are read from deployments/prefect.yaml,
their single source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[3]  # the repository: episodic/adapters/cli/
SPEC_PATH = ROOT / "deployments" / "prefect.yaml"


def spec() -> list[dict[str, Any]]:
    """The deployments declared in prefect.yaml."""
    return list(yaml.safe_load(SPEC_PATH.read_text())["deployments"])


def schedules() -> dict[str, str | None]:
    """Deployment name -> its cron, or None for a deployment run by hand."""
    out: dict[str, str | None] = {}
    for d in spec():
        crons = [s["cron"] for s in d.get("schedules") or [] if s.get("active", True)]
        out[d["name"]] = crons[0] if crons else None
    return out


def deployments() -> list[Any]:
    from prefect.flows import Flow, load_flow_from_entrypoint
    from prefect.schedules import Cron

    out = []
    for d in spec():
        path, func = d["entrypoint"].split(":")
        flow: Flow[..., Any] = load_flow_from_entrypoint(f"{ROOT / path}:{func}")
        crons = [s["cron"] for s in d.get("schedules") or [] if s.get("active", True)]
        kwargs: dict[str, Any] = {"schedules": [Cron(c, timezone="UTC") for c in crons]}
        if d.get("concurrency_limit") is not None:
            kwargs["concurrency_limit"] = _limit(d["concurrency_limit"])
        out.append(
            flow.to_deployment(
                name=d["name"],
                tags=d.get("tags") or [],
                parameters=d.get("parameters") or {},
                description=d.get("description"),
                **kwargs,
            )
        )
    return out


def _limit(spec: Any) -> Any:
    """prefect.yaml's concurrency_limit (an int or a mapping) for to_deployment."""
    from prefect.client.schemas.objects import ConcurrencyLimitConfig

    if isinstance(spec, int):
        return spec
    return ConcurrencyLimitConfig(
        limit=int(spec["limit"]), collision_strategy=spec.get("collision_strategy", "ENQUEUE")
    )


def serve_all(limit: int | None = None) -> None:
    """Block serving the deployments until SIGINT or SIGTERM; schedules are
    paused on the way out, so a stopped server leaves nothing queued."""
    from prefect import serve

    serve(*deployments(), limit=limit, print_starting_message=False)
