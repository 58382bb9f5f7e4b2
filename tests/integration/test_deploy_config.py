"""deployments/prefect.yaml and `episodic serve` declare the same flows with
the same schedules, and every entrypoint names a real flow."""

from __future__ import annotations

from pathlib import Path

import yaml
from prefect.flows import load_flow_from_entrypoint

from deployments.serve import SCHEDULES

ROOT = Path(__file__).resolve().parents[2]
SPEC = yaml.safe_load((ROOT / "deployments" / "prefect.yaml").read_text())


def test_yaml_and_serve_share_names_and_schedules() -> None:
    declared = {d["name"]: d for d in SPEC["deployments"]}
    assert set(declared) == set(SCHEDULES) == {"consolidate", "reflect", "maintain", "ingest"}
    for name, cron in SCHEDULES.items():
        crons = [s["cron"] for s in declared[name].get("schedules") or []]
        assert crons == ([cron] if cron else []), name
    assert SCHEDULES["consolidate"] == "* * * * *"  # every minute
    assert SCHEDULES["reflect"] == "*/10 * * * *"


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
