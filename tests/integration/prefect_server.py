"""A real `prefect server start` on 127.0.0.1 for the operator tests, and a
bounded way to stop the processes they start (SIGINT, then SIGTERM, then
SIGKILL, each with a timeout). Every process runs in its own session so that
its children (uvicorn, flow-run subprocesses) are cleaned up with it."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
STARTUP_S = 240.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env(home: Path, api_url: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "PREFECT_HOME": str(home / "prefect"),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "DO_NOT_TRACK": "1",
            "PREFECT_LOGGING_LEVEL": "INFO",
            "EPISODIC_HOME": str(home / "episodic"),
            "EPISODIC_EMBEDDER": "hash",
            "EPISODIC_LLM": "offline",
            "EPISODIC_USER_SLOT": "prefect",  # a real server expires a killed run's slot
            "HF_HUB_OFFLINE": "1",
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        }
    )
    env.pop("PREFECT_API_URL", None)
    if api_url:
        env["PREFECT_API_URL"] = api_url
    return env


def start(
    cmd: list[str], env: dict[str, str], log: Path, cwd: Path = ROOT
) -> subprocess.Popen[bytes]:
    out = log.open("wb")
    return subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )


@dataclass
class Stopped:
    seconds: float
    by: str  # the signal that ended it: SIGINT | SIGTERM | SIGKILL | exited
    returncode: int


def stop(proc: subprocess.Popen[bytes], int_s: float = 20.0, term_s: float = 15.0) -> Stopped:
    """SIGINT; after int_s SIGTERM; after term_s SIGKILL. Then the session's
    leftovers get SIGKILL too."""
    t0 = time.monotonic()
    by = "exited"
    if proc.poll() is None:
        for sig, wait in ((signal.SIGINT, int_s), (signal.SIGTERM, term_s), (signal.SIGKILL, 30.0)):
            by = sig.name
            proc.send_signal(sig)
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
    took = time.monotonic() - t0
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the session we created for it
    except (ProcessLookupError, PermissionError):
        pass
    return Stopped(round(took, 2), by, proc.returncode if proc.returncode is not None else -9)


def run(cmd: list[str], env: dict[str, str], timeout: float = 180.0) -> str:
    res = subprocess.run(
        cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if res.returncode != 0:
        raise AssertionError(f"{cmd} failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
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
    proc = start(
        [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env,
        home / "server.log",
    )
    srv = Server(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}/api", home, proc)
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"server exited: {(home / 'server.log').read_text()[-3000:]}")
            try:
                if httpx.get(f"{srv.api_url}/health", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"server not up after {STARTUP_S} s")
            time.sleep(1.0)
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
