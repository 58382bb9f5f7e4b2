"""kill -9 of a CLI command leaves no Prefect server behind.

`episodic consolidate` starts Prefect's temporary API server as a child
process; the test waits until that server answers, SIGKILLs the command, and
asserts that within a bounded wait the server it started (found by parent
PID, checked by PID and start time) has exited and its port refuses
connections. Without episodic.adapters.cli.ephemeral the server is re-parented and keeps
listening."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.integration.reliability_support import (
    ROOT,
    fact_turns,
    run_in_root,
    runtime_env,
    write_jsonl,
)

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(ppid, state, start time) of a live process; None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), fields[0], int(fields[19])


def _children(pid: int) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and (st := _stat(int(d.name))) and st[0] == pid:
            try:
                out[int(d.name)] = (d / "cmdline").read_bytes().decode().split("\0")
            except OSError:
                continue
    return out


def _alive(pid: int, started: int) -> bool:
    st = _stat(pid)
    return st is not None and st[2] == started and st[1] != "Z"


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_kill_9_of_consolidate_leaves_no_prefect_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env.update(runtime_env(home), PREFECT_HOME=str(tmp_path / "prefect"), PYTHONPATH=str(ROOT))
    src = write_jsonl(tmp_path / "in.jsonl", fact_turns(episodes=8))
    ingest = run_in_root(
        [sys.executable, "-m", "episodic.adapters.cli.main", "ingest", str(src), "--json"], env
    )
    assert ingest.returncode == 0, ingest.stderr[-2000:]

    cli = subprocess.Popen(
        [sys.executable, "-m", "episodic.adapters.cli.main", "consolidate", "--json"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started: dict[int, int] = {}  # every child of the command: pid -> start time
    server = port = None
    try:
        deadline = time.monotonic() + 600
        while port is None or not _answers(port):
            assert cli.poll() is None, "the command ended before its server was up"
            assert time.monotonic() < deadline, "the temporary server never answered"
            for pid, argv in _children(cli.pid).items():
                st = _stat(pid)
                if st is not None:
                    started.setdefault(pid, st[2])
                if "uvicorn" in argv and "--port" in argv:
                    server, port = pid, int(argv[argv.index("--port") + 1])
            time.sleep(0.05)
        started.update({pid: st[2] for pid in _children(cli.pid) if (st := _stat(pid))})
        assert server is not None and port is not None
        cli.send_signal(signal.SIGKILL)
        cli.wait(timeout=60)

        deadline = time.monotonic() + 60
        while any(_alive(p, t) for p, t in started.items()) or _listening(port):
            assert time.monotonic() < deadline, (
                f"left running: {[p for p, t in started.items() if _alive(p, t)]}, "
                f"port {port} listening: {_listening(port)}"
            )
            time.sleep(0.2)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
        for pid, t in started.items():  # a failed run must not leave them for other tests
            if _alive(pid, t):
                os.kill(pid, signal.SIGKILL)
