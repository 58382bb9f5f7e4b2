"""A real `episodic api` on 127.0.0.1: a subprocess on a free port, its own
EPISODIC_HOME, stopped (SIGTERM, then SIGKILL) when the test is done."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "EPISODIC_HOME": str(home),
            "EPISODIC_EMBEDDER": "hash",
            "EPISODIC_LLM": "offline",
            "PYTHONPATH": str(ROOT),
        }
    )
    env.pop("PREFECT_API_URL", None)
    return env


def run_cli(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from episodic.adapters.cli.main import main; main()", *args],
        env=cli_env(home),
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


@dataclass
class Server:
    url: str
    home: Path
    proc: subprocess.Popen[bytes]

    def key(self, user: str, scopes: tuple[str, ...] = ("read", "write")) -> str:
        from storage.db import Store
        from storage.keys import ApiKeys

        return ApiKeys(Store(str(self.home / "lancedb"))).create(user, scopes)[0]

    def client(self, key: str | None = None, timeout: float = 120.0) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)


@contextmanager
def api_server(home: Path, startup_s: float = 180.0) -> Iterator[Server]:
    port = free_port()
    log = (home / "api.log").open("wb") if home.mkdir(parents=True, exist_ok=True) is None else None
    proc = subprocess.Popen(
        [sys.executable, "-c", "from episodic.adapters.cli.main import main; main()", "api", "--port", str(port)],
        env=cli_env(home),
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"api exited {proc.returncode}: {(home / 'api.log').read_text()}"
                )
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("api did not start")
            time.sleep(0.2)
        yield Server(url, home, proc)
    finally:
        proc.terminate()  # SIGTERM: the server's graceful shutdown
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log:
            log.close()
