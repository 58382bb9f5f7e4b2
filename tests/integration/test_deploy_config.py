"""`episodic serve` takes its flows and schedules from deployments/prefect.yaml,
and every entrypoint names a real flow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from prefect.flows import Flow, load_flow_from_entrypoint

from episodic.adapters.cli.serve import deployments, schedules

ROOT = Path(__file__).resolve().parents[2]
SPEC = yaml.safe_load((ROOT / "deployments" / "prefect.yaml").read_text())


def test_serve_builds_the_yaml_deployments() -> None:
    declared = {d["name"]: d for d in SPEC["deployments"]}
    assert set(declared) == {"consolidate", "consolidate-user", "reflect", "maintain", "ingest"}
    served = {d.name: d for d in deployments()}
    assert set(served) == set(declared)
    for name, d in served.items():
        crons = [s.schedule.cron for s in d.schedules or []]
        assert crons == [s["cron"] for s in declared[name].get("schedules") or []], name
    assert schedules()["consolidate"] == "* * * * *"  # every minute
    assert schedules()["reflect"] == "*/10 * * * *"
    assert schedules()["ingest"] is None
    assert schedules()["consolidate-user"] is None


def test_entrypoints_load_and_pool_is_process() -> None:
    for d in SPEC["deployments"]:
        assert d["work_pool"]["name"] == "episodic-pool"
        path, func = d["entrypoint"].split(":")
        assert (ROOT / path).is_file()
        flow: Flow[..., Any] = load_flow_from_entrypoint(str(ROOT / path) + ":" + func)
        # consolidate-user runs the consolidate flow for one user
        assert flow.name == d["name"].removesuffix("-user")
    ingest = next(d for d in SPEC["deployments"] if d["name"] == "ingest")
    flow = load_flow_from_entrypoint(str(ROOT / "flows/ingest.py") + ":ingest")
    assert {"path", "format", "user"} <= set(flow.parameters.properties)
    assert ingest["parameters"] == {"format": "auto"}


def test_every_deployment_runs_one_at_a_time() -> None:
    """prefect.yaml gives each scheduled flow concurrency_limit 1; a late
    scheduled run is cancelled (skipped), never stacked; ingest by hand queues.
    Per-user consolidate runs queue, several at once (one user: its own limit)."""
    declared = {d["name"]: d["concurrency_limit"] for d in SPEC["deployments"]}
    per_user = declared.pop("consolidate-user")
    assert per_user == {"limit": 8, "collision_strategy": "ENQUEUE"}
    want = {"consolidate": "CANCEL_NEW", "reflect": "CANCEL_NEW", "maintain": "CANCEL_NEW"}
    want["ingest"] = "ENQUEUE"
    assert {k: v["collision_strategy"] for k, v in declared.items()} == want
    assert all(v["limit"] == 1 for v in declared.values())
    for d in deployments():
        if d.name == "consolidate-user":
            continue
        assert d.concurrency_limit == 1, d.name
        assert d.concurrency_options is not None
        assert d.concurrency_options.collision_strategy.value == want[d.name], d.name
