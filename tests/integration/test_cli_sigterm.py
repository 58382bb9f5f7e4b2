"""SIGTERM to a command that started children stops them (issue 32, finding
8): `episodic api` with Prefect's temporary server up (started by a
consolidation it ran), and `episodic llm serve` with llama.cpp up. Every
child the command started is gone within a bounded wait and the command
exits."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.integration.api_support import CLI, ROOT, cli_env, free_port, run_cli
from tests.integration.test_cli_prefect_orphan import _alive, _children, _stat

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


def _descendants(pid: int) -> dict[int, int]:
    """pid -> start time of every process below `pid`."""
    out: dict[int, int] = {}
    todo = [pid]
    while todo:
        for child in _children(todo.pop()):
            if (st := _stat(child)) is not None and child not in out:
                out[child] = st[2]
                todo.append(child)
    return out


def _sigterm_and_wait(proc: subprocess.Popen[bytes], seen: dict[int, int]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    deadline = time.monotonic() + 60
    while any(_alive(p, t) for p, t in seen.items()):
        assert time.monotonic() < deadline, [p for p, t in seen.items() if _alive(p, t)]
        time.sleep(0.2)


def test_sigterm_to_api_stops_its_prefect_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**cli_env(home), "EPISODIC_AUTO_CONSOLIDATE_S": "0"}
    key = run_cli(home, "keys", "create", "--user", "u", "--json")
    assert key.returncode == 0, key.stderr
    secret = json.loads(key.stdout)["key"]
    port = free_port()
    proc = subprocess.Popen([*CLI, "api", "--port", str(port)], env=env, cwd=ROOT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 300
        while True:
            assert proc.poll() is None and time.monotonic() < deadline
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.3)
        auth = {"Authorization": f"Bearer {secret}"}
        turns = [{"role": "user", "text": "I live in Paris.", "ts": "2025-03-02T09:00:00Z"}]
        assert httpx.post(url + "/v1/turns", json={"turns": turns}, headers=auth).status_code == 200
        done = httpx.post(url + "/v1/consolidate", headers=auth, timeout=600)
        assert done.status_code == 200, done.text
        seen = _descendants(proc.pid)
        assert seen, "the consolidation started no Prefect server"
        _sigterm_and_wait(proc, seen)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigterm_to_llm_serve_stops_llama_cpp(tmp_path: Path) -> None:
    from episodic.service.llm_server import available

    if not available():
        pytest.skip("llama-cpp-python and the packaged model are not installed")
    port = free_port()
    proc = subprocess.Popen(
        [*CLI, "llm", "serve", "--port", str(port)], env=cli_env(tmp_path), cwd=ROOT
    )
    try:
        deadline = time.monotonic() + 300
        seen: dict[int, int] = {}
        while not seen:
            assert proc.poll() is None and time.monotonic() < deadline
            seen = _descendants(proc.pid)
            time.sleep(0.2)
        _sigterm_and_wait(proc, seen)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
