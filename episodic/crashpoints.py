"""Named points between persistence steps where a test can make the process
die: EPISODIC_CRASHPOINT=name[:nth][:mode]. Off unless the variable is set;
costs one dict lookup per point.

Modes: none (exit 137 at once, like SIGKILL: no cleanup, no flush), `raise`
(InjectedCrash, for in-process tests) and `enospc` (OSError ENOSPC, what a
full disk gives a writer)."""

from __future__ import annotations

import errno
import os
import threading

from episodic.config import crashpoint_spec

_hits: dict[str, int] = {}
_lock = threading.Lock()


class InjectedCrash(RuntimeError):
    pass


def crashpoint(name: str) -> None:
    spec = crashpoint_spec()
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
    mode = parts[2] if len(parts) > 2 else ""
    if mode == "raise":
        raise InjectedCrash(f"injected crash at {name} (hit {nth})")
    if mode == "enospc":
        raise OSError(errno.ENOSPC, f"No space left on device (injected at {name}, hit {nth})")
    os._exit(137)  # like SIGKILL: no cleanup, no flush


def reset() -> None:
    with _lock:
        _hits.clear()
