"""Named points between persistence steps where a test can make the process
die (EPISODIC_CRASHPOINT=name[:nth][:raise]). Off unless the variable is set;
costs one dict lookup per point."""

from __future__ import annotations

import os
import threading

_hits: dict[str, int] = {}
_lock = threading.Lock()


class InjectedCrash(RuntimeError):
    pass


def crashpoint(name: str) -> None:
    spec = os.environ.get("EPISODIC_CRASHPOINT")
    if not spec:
        return
    parts = spec.split(":")
    if parts[0] != name:
        return
    nth = int(parts[1]) if len(parts) > 1 and parts[1] else 1
    with _lock:
        _hits[name] = _hits.get(name, 0) + 1
        hit = _hits[name] == nth
    if not hit:
        return
    if len(parts) > 2 and parts[2] == "raise":
        raise InjectedCrash(f"injected crash at {name} (hit {nth})")
    os._exit(137)  # like SIGKILL: no cleanup, no flush


def reset() -> None:
    with _lock:
        _hits.clear()
