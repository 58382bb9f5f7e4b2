"""`episodic serve` takes its flows and schedules from deployments/prefect.yaml,
and every entrypoint names a real flow."""

from __future__ import annotations

from pathlib import Path

import yaml
from prefect.flows import load_flow_from_entrypoint

from cli.serve import deployments, schedules

ROOT = Path(__file__).resolve().parents[2]
SPEC = yaml.safe_load((ROOT / "deployments" / "prefect.yaml").read_text())


def test_serve_builds_the_yaml_deployments() -> None:
    declared = {d["name"]: d for d in SPEC["deployments"]}
    assert set(declared) == {"consolidate", "reflect", "maintain", "ingest"}
    served = {d.name: d for d in deployments()}
    assert set(served) == set(declared)
    for name, d in served.items():
        crons = [s.schedule.cron for s in d.schedules or []]
        assert crons == [s["cron"] for s in declared[name].get("schedules") or []], name
    assert schedules()["consolidate"] == "* * * * *"  # every minute
    assert schedules()["reflect"] == "*/10 * * * *"
    assert schedules()["ingest"] is None


def test_entrypoints_load_and_pool_is_process() -> None:
    for d in SPEC["deployments"]:
        assert d["work_pool"]["name"] == "episodic-pool"
        path, func = d["entrypoint"].split(":")
        assert (ROOT / path).is_file()
        flow = load_flow_from_entrypoint(str(ROOT / path) + ":" + func)
        assert flow.name == d["name"]
    ingest = next(d for d in SPEC["deployments"] if d["name"] == "ingest")
    flow = load_flow_from_entrypoint(str(ROOT / "flows/ingest.py") + ":ingest")
    assert {"path", "format", "user"} <= set(flow.parameters.properties)
    assert ingest["parameters"] == {"format": "auto"}
