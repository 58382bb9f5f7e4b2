"""Ending a child process we started: politely first, then for certain."""

from __future__ import annotations

import subprocess
from typing import Any


def terminate(proc: subprocess.Popen[Any], grace_s: float) -> None:
    """SIGTERM, then SIGKILL when it has not exited within `grace_s`; reaped either way."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
