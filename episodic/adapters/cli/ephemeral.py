"""Prefect's temporary API server, tied to the life of the process that started it.

Without PREFECT_API_URL, Prefect 3 runs its API as a child `uvicorn` process
(`SubprocessASGIServer`) and stops it at interpreter exit. A SIGKILL (or an
unhandled SIGTERM) skips that: the child is re-parented to PID 1 and keeps
listening. `tie()` makes the server Prefect will start one that also starts a
watchdog per server process: a small process that blocks reading a pipe only
this process holds open. End of file, which the kernel delivers however this
process ends, makes it terminate the server (SIGKILL after 5 s). On Linux the
watchdog holds a pidfd of the server, so it can never signal a recycled PID.

Why a watchdog and not PR_SET_PDEATHSIG: Prefect builds its Popen without a
hook for a preexec function, and a preexec function is unsafe with the threads
Prefect already runs. The one gap left is a kill in the milliseconds between
starting the server and starting its watchdog.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from typing import Any

log = logging.getLogger(__name__)

WATCHDOG = r"""
import os, select, signal, sys, time
fd, pid = int(sys.argv[1]), int(sys.argv[2])
while os.read(0, 65536):
    pass

def send(sig):
    try:
        if fd >= 0:
            signal.pidfd_send_signal(fd, sig)
        else:
            os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False

def exited(timeout):
    if fd >= 0:
        return bool(select.select([fd], [], [], timeout)[0])
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not send(0):
            return True
        time.sleep(0.05)
    return False

if send(signal.SIGTERM) and not exited(5.0):
    send(signal.SIGKILL)
"""


def watch(pid: int) -> subprocess.Popen[bytes]:
    """A watchdog that terminates `pid` once this process has exited. Call it
    while `pid` is this process's unreaped child, so the pidfd names it."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = -1  # not Linux: signal by PID
    try:
        return subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", WATCHDOG, str(pidfd), str(pid)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(pidfd,) if pidfd >= 0 else (),
            start_new_session=True,  # Ctrl-C in the terminal is for the command, not for it
        )
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def release(dog: subprocess.Popen[bytes]) -> None:
    """Close the watchdog's pipe (it finds its server gone and exits) and reap it."""
    if dog.stdin is not None:
        with contextlib.suppress(OSError):
            dog.stdin.close()
    try:
        dog.wait(timeout=10)
    except subprocess.TimeoutExpired:
        dog.kill()
        dog.wait()


def tie() -> None:
    """Make the temporary server Prefect starts in this process a watched one.
    A no-op with PREFECT_API_URL (a server someone else runs) or when Prefect
    already made its server here."""
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return
    from prefect.server.api.server import SubprocessASGIServer

    class WatchedServer(SubprocessASGIServer):
        def __init__(self, port: int | None = None) -> None:
            super().__init__(port)
            if not hasattr(self, "watchdogs"):
                self.watchdogs: list[subprocess.Popen[bytes]] = []

        def _run_uvicorn_command(self) -> subprocess.Popen[Any]:
            proc = super()._run_uvicorn_command()
            try:
                self.watchdogs.append(watch(proc.pid))
            except OSError as e:  # no watchdog is no reason to fail the command
                log.warning("no watchdog for the temporary Prefect server: %s", e)
            return proc

        def stop(self) -> None:
            super().stop()
            while self.watchdogs:
                release(self.watchdogs.pop())

    if None not in SubprocessASGIServer._instances:
        WatchedServer()  # Prefect's SubprocessASGIServer() now returns this instance
