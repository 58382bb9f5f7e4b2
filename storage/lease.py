"""One consolidation per user at a time. On a local store, an OS file lock
next to the database through `filelock` (flock, released by the kernel if the
process dies, so a SIGKILL never leaves a stale lease)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from episodic.errors import BusyError
from episodic.models import stable_id


class LeaseBusy(BusyError):
    def __init__(self, user_id_hash: str, waited_s: float) -> None:
        super().__init__(
            f"another consolidation holds user {user_id_hash} (waited {waited_s:.0f}s)"
        )
        self.user_id_hash = user_id_hash
        self.waited_s = waited_s


def lock_dir(db_uri: str) -> Path | None:
    if "://" in db_uri:
        return None  # object storage: rely on the checkpoint version check
    p = Path(db_uri)
    return p.with_name(p.name + ".locks")


@contextmanager
def file_lock(db_uri: str, name: str, *, wait_s: float | None = None) -> Iterator[bool]:
    """An exclusive kernel lock (`filelock`, flock underneath) on
    `<db>.locks/<name>.lock`; a no-op on object storage. Waits forever when
    wait_s is None, else raises LeaseBusy after wait_s. Yields True when it
    had to wait."""
    d = lock_dir(db_uri)
    if d is None:
        yield False
        return
    d.mkdir(parents=True, exist_ok=True)
    # a fresh lock object per holder: two threads of one process exclude each
    # other as two processes do; the file stays, so every holder locks one inode
    lock = FileLock(d / f"{name}.lock", mode=0o600, preserve_lock_file=True, fallback_to_soft=False)
    start = time.monotonic()
    waited = False
    try:
        lock.acquire(blocking=False)
    except Timeout:
        waited = True
        try:
            lock.acquire(timeout=-1 if wait_s is None else wait_s, poll_interval=0.05)
        except Timeout:
            raise LeaseBusy(name[:8], time.monotonic() - start) from None
    try:
        yield waited
    finally:
        lock.release()


@contextmanager
def user_lease(
    db_uri: str, user_id: str, *, wait_s: float = 600.0, scope: str = ""
) -> Iterator[bool]:
    """Hold the user's lease; wait up to wait_s, then raise LeaseBusy.
    Yields True when it had to wait for another run. A `scope` names a
    separate lease of the same user (e.g. "facts"), which a holder of the
    main lease may take inside it without waiting on itself."""
    # never put a user value in a path
    name = stable_id("lease", user_id) if not scope else stable_id("lease", scope, user_id)
    with file_lock(db_uri, name, wait_s=wait_s) as waited:
        yield waited
