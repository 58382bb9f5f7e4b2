"""From a fresh checkout against a real local Prefect server: create the work
pool, `prefect deploy --all` from deployments/prefect.yaml, start a process
worker, trigger `consolidate` by hand and see it Completed; then the same
flows served by `episodic serve`, which stops cleanly on SIGTERM."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from episodic.adapters.embedded import Memory
from episodic.bench.servers import run_checked
from episodic.config import Settings
from episodic.models import user_tag
from tests.integration.helpers import synthetic_stream, write_jsonl
from tests.integration.prefect_server import (
    BIN,
    Server,
    flow_run_id,
    prefect_server,
    run,
    start,
    stop,
    wait_for_state,
)

pytestmark = pytest.mark.slow
PREFECT = str(BIN / "prefect")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with prefect_server(tmp_path_factory.mktemp("prefect-deploy")) as srv:
        yield srv


def _memory(srv: Server) -> Memory:
    """The memory the worker's runs use (the server's home), opened afresh."""
    return Memory(Settings(home=srv.home / "episodic", embedder="hash", llm="offline"))


def _ingest(srv: Server, user: str) -> int:
    path = write_jsonl(srv.home / f"{user}.jsonl", synthetic_stream(user=user))
    with _memory(srv) as memory:
        return memory.ingest(path, "jsonl").accepted


def _episodes(srv: Server, user: str) -> int:
    with _memory(srv) as memory:
        return len(memory.episodes(user))


def test_deploy_from_yaml_and_worker_completes_consolidate(server: Server) -> None:
    env = server.env()
    assert _ingest(server, "u1") > 0
    run([PREFECT, "work-pool", "create", "episodic-pool", "--type", "process"], env)
    t0 = time.monotonic()
    out = run(
        [PREFECT, "--no-prompt", "deploy", "--all", "--prefect-file", "deployments/prefect.yaml"],
        env,
    )
    deploy_s = time.monotonic() - t0
    for name in (
        "consolidate/consolidate",
        "consolidate/consolidate-user",
        "reflect/reflect",
        "maintain/maintain",
        "ingest/ingest",
    ):
        assert f"Deployment '{name}' successfully created" in out, out
    deployments = server.post("/deployments/filter", {})
    by_name = {d["name"]: d for d in deployments}
    assert set(by_name) == {"consolidate", "consolidate-user", "reflect", "maintain", "ingest"}
    assert by_name["consolidate"]["work_pool_name"] == "episodic-pool"
    # one scheduled run at a time: a late one is cancelled, never stacked
    assert by_name["consolidate"]["global_concurrency_limit"]["limit"] == 1
    assert by_name["consolidate"]["concurrency_options"]["collision_strategy"] == "CANCEL_NEW"
    crons = {d["name"]: [s["schedule"].get("cron") for s in d["schedules"]] for d in deployments}
    assert crons == {
        "consolidate": ["* * * * *"],
        "consolidate-user": [],
        "reflect": ["*/10 * * * *"],
        "maintain": ["0 3 * * *"],
        "ingest": [],
    }

    # the every-minute schedule would race the manual run for the one slot, and
    # CANCEL_NEW rightly cancels the loser: pause it (its scheduled runs go too)
    server.post(f"/deployments/{by_name['consolidate']['id']}/pause_deployment", {})
    worker = start(
        [PREFECT, "worker", "start", "--pool", "episodic-pool"], env, server.home / "worker.log"
    )
    try:
        out = run(
            [PREFECT, "deployment", "run", "consolidate/consolidate", "--param", "user=u1"], env
        )
        flow_run = wait_for_state(server, flow_run_id(out), timeout=180)
    finally:
        stopped = stop(worker, int_s=15.0, term_s=10.0)
        print(
            f"deploy {deploy_s:.1f} s; worker stopped by {stopped.by} in {stopped.seconds} s "
            f"(exit {stopped.returncode})"
        )
    log = (server.home / "worker.log").read_text(errors="replace")
    assert flow_run["state"]["type"] == "COMPLETED", log[-3000:]
    assert flow_run["name"].startswith(f"consolidate-{user_tag('u1')}-")  # a hash, not the id
    assert _episodes(server, "u1") > 0
    artifacts = server.post(
        "/artifacts/filter", {"artifacts": {"key": {"any_": ["consolidate-report"]}}}
    )
    (report,) = [a for a in artifacts if a["flow_run_id"] == flow_run["id"]]
    assert f"users (tags): {user_tag('u1')}" in report["data"] and "u1" not in report["data"]


def test_episodic_serve_runs_a_flow_and_stops_on_sigterm(server: Server) -> None:
    env = server.env()
    _ingest(server, "u2")
    # serve and a work pool use the same deployment names: switch by deleting
    for d in server.post("/deployments/filter", {}):
        server.delete(f"/deployments/{d['id']}")
    assert server.post("/deployments/filter", {}) == []
    serve = start([str(BIN / "episodic"), "serve"], env, server.home / "serve.log")
    try:
        # the served deployment exists once serve has registered it
        deadline = time.monotonic() + 150
        out = ""
        while time.monotonic() < deadline:
            assert serve.poll() is None, (server.home / "serve.log").read_text()[-3000:]
            deps = server.post("/deployments/filter", {})
            served = [d for d in deps if d["name"] == "consolidate"]
            if served:
                # as above: no scheduled run may take the slot of the manual one
                server.post(f"/deployments/{served[0]['id']}/pause_deployment", {})
                out = run(
                    [PREFECT, "deployment", "run", "consolidate/consolidate", "--param", "user=u2"],
                    env,
                )
                break
            time.sleep(2)
        assert out, "episodic serve did not register its deployments"
        flow_run = wait_for_state(server, flow_run_id(out), timeout=180)
        assert flow_run["state"]["type"] == "COMPLETED"
        assert _episodes(server, "u2") > 0
    finally:
        t0 = time.monotonic()
        serve.terminate()  # SIGTERM, as a service manager sends it
        code: int | None
        try:
            code = serve.wait(timeout=60)
        except Exception:
            code = None
        took = time.monotonic() - t0
        leftover = stop(serve, int_s=5.0, term_s=5.0)
    log = (server.home / "serve.log").read_text(errors="replace")
    print(f"episodic serve stopped on SIGTERM in {took:.1f} s with code {code}")
    assert code in (0, 143), f"exit {code} ({leftover.by}):\n{log[-3000:]}"
    assert "episodic serve: stopped" in log
    assert "Traceback" not in log


def test_a_cli_run_is_quiet_in_the_terminal_and_logged_in_the_ui(server: Server) -> None:
    """`episodic consolidate` against the server, in the CLI's own logging
    (no PREFECT_LOGGING_LEVEL): the terminal shows no Prefect INFO line, and
    the run's log in the UI says what happened."""
    env = server.env()
    env.pop("PREFECT_LOGGING_LEVEL")
    _ingest(server, "u3")
    cmd = [str(BIN / "episodic"), "consolidate", "--user", "u3", "--flush", "--json"]
    res = run_checked(cmd, env, timeout=180)
    assert json.loads(res.stdout)["episodes_closed"] > 0
    assert "INFO" not in res.stderr, res.stderr[-3000:]
    named = {"name": {"like_": f"consolidate-{user_tag('u3')}-"}}
    runs = server.post("/flow_runs/filter", {"flow_runs": named})
    assert len(runs) == 1
    logs = server.post("/logs/filter", {"logs": {"flow_run_id": {"any_": [runs[0]["id"]]}}})
    messages = [entry["message"] for entry in logs]
    assert any(m.startswith("read ") and "closed" in m for m in messages), messages
    assert any(m.startswith("facts: ") for m in messages), messages
    assert not [m for m in messages if "u3" in m]  # Prefect's logs never hold the user's id
