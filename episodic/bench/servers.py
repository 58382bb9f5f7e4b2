"""Local servers started as child processes: by the benchmarks (scale_out's
Prefect server and workers, `bench api`) and by the operator tests, whose
tests/integration/prefect_server.py builds on this module (bench/ imports
nothing from tests/).

    child_env(home)        os.environ with Prefect and episodic kept in `home`
    start(cmd, env, log)   a process in its own session, its output to `log`
    wait_healthy(url, ..)  until the URL answers 200, or the process exits
    stop(proc)             SIGINT, SIGTERM, SIGKILL, each with a timeout
    run_checked(cmd, env)  a command run to its end, its output or an error
    prefect_server_cmd     `prefect server start` on 127.0.0.1
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from episodic.service.llm_server import free_port

__all__ = [
    "BIN",
    "ROOT",
    "Stopped",
    "child_env",
    "free_port",
    "prefect_server_cmd",
    "run_checked",
    "start",
    "stop",
    "wait_healthy",
]

ROOT = Path(__file__).resolve().parents[2]  # the repository
BIN = Path(sys.executable).parent


def child_env(home: Path, api_url: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of a child: Prefect's home and episodic's under `home`
    (a run without its own EPISODIC_DB_URI stays inside it), the hash embedder
    and the offline LLM, no telemetry, this venv first on PATH, and `extra`.
    PREFECT_API_URL is `api_url` when given, never the caller's."""
    env = dict(os.environ)
    env.update(
        {
            "PREFECT_HOME": str(home / "prefect"),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "DO_NOT_TRACK": "1",
            "EPISODIC_HOME": str(home / "episodic"),
            "EPISODIC_EMBEDDER": "hash",
            "EPISODIC_LLM": "offline",
            "EPISODIC_USER_SLOT": "prefect",  # a real server expires a killed run's slot
            "HF_HUB_OFFLINE": "1",
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            **extra,
        }
    )
    env.pop("PREFECT_API_URL", None)
    if api_url:
        env["PREFECT_API_URL"] = api_url
    return env


def prefect_server_cmd(port: int) -> list[str]:
    return [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)]


def start(
    cmd: Sequence[str], env: dict[str, str], log: Path, cwd: Path = ROOT
) -> subprocess.Popen[bytes]:
    """`cmd` in its own session, so that its children (uvicorn, flow-run
    subprocesses) are stopped with it; stdout and stderr to `log`."""
    return subprocess.Popen(
        list(cmd),
        cwd=cwd,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_healthy(
    url: str,
    proc: subprocess.Popen[bytes],
    limit_s: float,
    log: Path | None = None,
    poll_s: float = 1.0,
) -> None:
    """Until GET `url` answers 200. RuntimeError when `proc` exits first (with
    the end of its log), TimeoutError after `limit_s`."""
    import httpx

    deadline = time.monotonic() + limit_s
    while True:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:] if log is not None else ""
            raise RuntimeError(
                f"{proc.args!r} exited {proc.returncode} before {url} answered\n{tail}"
            )
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} did not answer 200 in {limit_s:.0f} s")
        time.sleep(poll_s)


@dataclass
class Stopped:
    seconds: float
    by: str  # the signal that ended it: SIGINT | SIGTERM | SIGKILL | exited
    returncode: int


def stop(
    proc: subprocess.Popen[bytes], int_s: float | None = 20.0, term_s: float = 15.0
) -> Stopped:
    """SIGINT (none when `int_s` is None); after int_s SIGTERM; after term_s
    SIGKILL. Then the session's leftovers get SIGKILL too."""
    t0 = time.monotonic()
    by = "exited"
    steps = [(signal.SIGTERM, term_s), (signal.SIGKILL, 30.0)]
    if int_s is not None:
        steps.insert(0, (signal.SIGINT, int_s))
    if proc.poll() is None:
        for sig, wait in steps:
            by = sig.name
            proc.send_signal(sig)
            try:
                proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
    took = time.monotonic() - t0
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the session start() made for it
    except (ProcessLookupError, PermissionError):
        pass
    return Stopped(round(took, 2), by, proc.returncode if proc.returncode is not None else -9)


def run_checked(
    cmd: Sequence[str], env: dict[str, str], timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    """`cmd` run from the checkout to its end; RuntimeError with its output
    when it fails."""
    res = subprocess.run(
        list(cmd), cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if res.returncode != 0:
        out = f"{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
        raise RuntimeError(f"{' '.join(cmd)} failed ({res.returncode}):\n{out}")
    return res
