"""A real `prefect server start` on 127.0.0.1 for the operator tests, and a
bounded way to stop the processes they start (SIGINT, then SIGTERM, then
SIGKILL, each with a timeout). Every process runs in its own session so that
its children (uvicorn, flow-run subprocesses) are cleaned up with it. The
process handling is episodic/bench/servers.py's, which the scale-out benchmark uses too."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from episodic.bench import servers
from episodic.bench.servers import BIN, free_port, prefect_server_cmd, start, stop

__all__ = [
    "BIN",
    "Server",
    "flow_run_id",
    "prefect_server",
    "run",
    "start",
    "stop",
    "wait_for_state",
]

STARTUP_S = 240.0


def child_env(home: Path, api_url: str | None = None) -> dict[str, str]:
    return servers.child_env(home, api_url, PREFECT_LOGGING_LEVEL="INFO")


def run(cmd: list[str], env: dict[str, str], timeout: float = 180.0) -> str:
    res = servers.run_checked(cmd, env, timeout)
    return res.stdout + res.stderr


@dataclass
class Server:
    url: str  # the UI, e.g. http://127.0.0.1:4321
    api_url: str
    home: Path
    proc: subprocess.Popen[bytes]

    def env(self) -> dict[str, str]:
        return child_env(self.home, self.api_url)

    def get(self, path: str) -> Any:
        return _send("GET", f"{self.api_url}{path}").json()

    def delete(self, path: str) -> None:
        _send("DELETE", f"{self.api_url}{path}")

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return _send("POST", f"{self.api_url}{path}", body).json()


# Prefect answers 503 while its SQLite database is locked by a writer
@retry(
    retry=retry_if_exception(
        lambda e: isinstance(e, httpx.HTTPStatusError) and e.response.status_code == 503
    ),
    wait=wait_exponential(multiplier=0.5, max=5),
    stop=stop_after_attempt(8),
    reraise=True,
)
def _send(method: str, url: str, body: dict[str, Any] | None = None) -> httpx.Response:
    r = httpx.request(method, url, json=body, timeout=30)
    r.raise_for_status()
    return r


@contextmanager
def prefect_server(home: Path) -> Iterator[Server]:
    """`prefect server start` on a free port with its own PREFECT_HOME."""
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = child_env(home)
    # the UI asks this URL for its API; it defaults to port 4200
    env["PREFECT_UI_API_URL"] = f"http://127.0.0.1:{port}/api"
    log = home / "server.log"
    proc = start(prefect_server_cmd(port), env, log)
    srv = Server(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}/api", home, proc)
    try:
        servers.wait_healthy(f"{srv.api_url}/health", proc, STARTUP_S, log)
        yield srv
    finally:
        stopped = stop(proc, int_s=20.0, term_s=10.0)
        print(f"prefect server stopped by {stopped.by} in {stopped.seconds} s")


UUID = re.compile(r"UUID:\s*([0-9a-f-]{36})")


def flow_run_id(cli_output: str) -> str:
    m = UUID.search(cli_output)
    assert m, f"no flow run id in:\n{cli_output}"
    return m.group(1)


def wait_for_state(srv: Server, run_id: str, timeout: float = 180.0) -> dict[str, Any]:
    """Poll the flow run until it reaches a final state; return it."""
    deadline = time.monotonic() + timeout
    run: dict[str, Any] = {}
    while time.monotonic() < deadline:
        run = srv.get(f"/flow_runs/{run_id}")
        state = (run.get("state") or {}).get("type")
        if state in {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}:
            return run
        time.sleep(2.0)
    raise AssertionError(f"flow run {run_id} not final after {timeout} s: {run.get('state')}")
