"""The agent faces under test.

- In process: `api_client(memory, key)` is the HTTP app over a memory, with
  its body limit, through FastAPI's TestClient (ASGI, no socket);
  `mcp_calls(server, calls)` calls MCP tools through the SDK's in-process
  client.
- A real `episodic api` on 127.0.0.1 (`api_server`): a subprocess on a free
  port, its own EPISODIC_HOME, stopped (SIGTERM, then SIGKILL) when the test is
  done; `run_cli` runs one CLI command on a home (`cli_child` in a given
  environment, `cli_json` reads its `--json`).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient

from episodic.service.memory import Memory
from episodic.subprocs import terminate

ROOT = Path(__file__).resolve().parents[2]


# ---- in process --------------------------------------------------------------
def api_client(memory: Memory, key: str | None = None) -> TestClient:
    """The app `episodic api` serves, over `memory`, with `key` as the bearer."""
    from episodic.adapters.http.app import create_app
    from episodic.adapters.http.limits import BodyLimit

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return TestClient(BodyLimit(create_app(memory)), headers=headers)


def new_key(memory: Memory, user: str, scopes: tuple[str, ...] = ("read", "write")) -> str:
    return memory.create_key(user, scopes)[0]


def mcp_calls(server: Any, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each (tool, arguments) called in turn on one session of the in-process
    `server`; the CallToolResults."""
    import anyio
    from mcp import Client

    async def run() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(run)


def tool_data(result: Any) -> dict[str, Any]:
    """A successful tool result's JSON."""
    assert not result.is_error, result
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


def tool_error(result: Any) -> str:
    """A refused tool call's text."""
    assert result.is_error, result
    return str(result.content[0].text)


# ---- out of process ------------------------------------------------------------
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


CLI = [sys.executable, "-c", "from episodic.adapters.cli.main import main; main()"]


def run_cli(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return cli_child(cli_env(home), *args, stdin=stdin)


def cli_child(
    env: dict[str, str], *args: str, stdin: str | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`episodic ARGS` in a child process with the environment `env`."""
    cmd = [*CLI, *args]
    return subprocess.run(
        cmd, env=env, cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=timeout
    )


def cli_json(env: dict[str, str], *args: str, timeout: float = 600) -> Any:
    """`episodic ARGS --json` in a child process, which must succeed: its JSON."""
    res = cli_child(env, *args, "--json", timeout=timeout)
    assert res.returncode == 0, (args, res.stderr[-2000:])
    return json.loads(res.stdout)


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
def api_server(
    home: Path, startup_s: float = 180.0, env: dict[str, str] | None = None
) -> Iterator[Server]:
    """`episodic api` on a free port of 127.0.0.1, on `home` (the suite's
    environment, `env` over it), stopped when the block ends."""
    port = free_port()
    home.mkdir(parents=True, exist_ok=True)
    with (home / "api.log").open("wb") as log:
        proc = subprocess.Popen(
            [*CLI, "api", "--port", str(port)],
            env={**cli_env(home), **(env or {})},
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
            terminate(proc, grace_s=20)  # SIGTERM first: the server's graceful shutdown
