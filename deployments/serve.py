"""Serve the four flows with their schedules from one process (Prefect's
`serve`): the one-machine alternative to a work pool and `prefect deploy`.
The schedules here and in deployments/prefect.yaml are the same (a test
checks it)."""

from __future__ import annotations

from typing import Any

# deployment name -> (cron schedule or None, default parameters)
SCHEDULES: dict[str, str | None] = {
    "consolidate": "* * * * *",  # every minute
    "reflect": "*/10 * * * *",  # every 10 minutes, besides the trigger from consolidate
    "maintain": "0 3 * * *",  # nightly, 03:00 UTC
    "ingest": None,  # by hand: prefect deployment run 'ingest/ingest' -p path=...
}


def deployments() -> list[Any]:
    from prefect.schedules import Cron

    from flows.consolidate import consolidate
    from flows.ingest import ingest
    from flows.maintain import maintain
    from flows.reflect import reflect

    flows: dict[str, Any] = {
        "consolidate": consolidate,
        "reflect": reflect,
        "maintain": maintain,
        "ingest": ingest,
    }
    out = []
    for name, f in flows.items():
        cron = SCHEDULES[name]
        kwargs: dict[str, Any] = {"schedule": Cron(cron, timezone="UTC")} if cron else {}
        out.append(f.to_deployment(name=name, tags=["episodic"], **kwargs))
    return out


def serve_all(limit: int | None = None) -> None:
    """Block serving the deployments until SIGINT or SIGTERM; schedules are
    paused on the way out, so a stopped server leaves nothing queued."""
    from prefect import serve

    serve(*deployments(), limit=limit, print_starting_message=False)
