"""The ingest journal: acknowledged writes, durable on local disk before they
reach LanceDB, so an API can answer a write after one fsync instead of after
the LanceDB commits of its turns and its receipt.

A journal is a directory of segment files. Each process appends to a segment
of its own, holding an OS lock on it (flock through `filelock`, released by
the kernel when the process dies). A record is a frame: 4-byte length, 4-byte
CRC-32, JSON. A crash in the middle of a write leaves a torn last frame; it
was never fsynced, so never acknowledged, and reading stops there.

The owner seals its segment (renames it) before moving its records into
LanceDB and drops it once they are there; a segment whose owner died (its
lock free) is replayed by whoever opens the journal next. Replay is safe to
repeat: raw turns and receipts are inserted by key.
"""

from __future__ import annotations

import json
import os
import struct
import uuid
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

OPEN = ".open"  # the owner still appends
SEALED = ".sealed"  # closed for appends, its records on their way to LanceDB
_FRAME = struct.Struct("<II")  # length, crc32


def journal_dir(db_uri: str) -> Path | None:
    """`<db>.journal` beside a local store; None on object storage, where a
    local disk would be a weaker promise than the store's own commit."""
    if "://" in db_uri:
        return None
    p = Path(db_uri)
    return p.with_name(p.name + ".journal")


def _lock(segment: Path) -> FileLock:
    return FileLock(segment.with_name(segment.stem + ".lock"), mode=0o600, fallback_to_soft=False)


def release(lock: FileLock) -> None:
    """Release a segment's lock and remove its file. Safe once the segment is
    dropped: whoever takes the lock next checks that the segment still exists."""
    lock.release()
    Path(lock.lock_file).unlink(missing_ok=True)


class Segment:
    """The one segment this process appends to; `append` returns once the
    records are on disk (written and fsynced)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{uuid.uuid4().hex}{OPEN}"
        self._lock = _lock(self.path)
        self._lock.acquire(blocking=False)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.records = 0

    def append(self, records: Sequence[dict[str, Any]]) -> None:
        buf = bytearray()
        for r in records:
            body = json.dumps(r, separators=(",", ":"), default=str).encode()
            buf += _FRAME.pack(len(body), zlib.crc32(body)) + body
        end = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            view = memoryview(buf)
            while view:  # a write may take part of the buffer; the rest or an error follows
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)
        except OSError:
            # a partial frame would end the segment for its readers: records
            # appended after it would be lost on replay, so cut it off
            os.ftruncate(self._fd, end)
            raise
        self.records += len(records)

    def seal(self) -> Path:
        """Close for appends; the sealed file stays locked until `release`."""
        os.close(self._fd)
        sealed = self.path.with_suffix(SEALED)
        os.replace(self.path, sealed)
        _fsync_dir(sealed.parent)
        return sealed

    def release(self) -> None:
        release(self._lock)


def read(segment: Path) -> Iterator[dict[str, Any]]:
    """The segment's records in order, up to a torn or corrupt frame."""
    data = segment.read_bytes()
    at = 0
    while at + _FRAME.size <= len(data):
        n, crc = _FRAME.unpack_from(data, at)
        body = data[at + _FRAME.size : at + _FRAME.size + n]
        if len(body) < n or zlib.crc32(body) != crc:
            return  # the tail of a write that was never acknowledged
        yield json.loads(body)
        at += _FRAME.size + n


def drop(segment: Path) -> None:
    """Delete a segment whose records are all in LanceDB (forget relies on it:
    the journal must not keep text once its turns are stored)."""
    segment.unlink(missing_ok=True)
    _fsync_dir(segment.parent)


def orphans(directory: Path) -> Iterator[tuple[Path, FileLock]]:
    """Segments whose owner is gone, each locked for the caller (`release`
    the lock after `drop`); a segment another process holds is skipped."""
    if not directory.is_dir():
        return
    files = list(directory.iterdir())
    segments = {p.stem for p in files if p.suffix in (OPEN, SEALED)}
    for stray in (p for p in files if p.suffix == ".lock" and p.stem not in segments):
        # a writer died between dropping its segment and releasing the lock
        stray_lock = FileLock(stray, fallback_to_soft=False)
        try:
            stray_lock.acquire(blocking=False)
        except Timeout:
            continue  # a writer that is creating its segment right now
        if not stray.with_suffix(OPEN).exists():  # not created meanwhile
            release(stray_lock)
        else:
            stray_lock.release()
    for seg in sorted(p for p in directory.iterdir() if p.suffix in (OPEN, SEALED)):
        lock = _lock(seg)
        try:
            lock.acquire(blocking=False)
        except Timeout:
            continue  # its owner is alive
        if not seg.exists():  # replayed by another process meanwhile
            release(lock)
            continue
        yield seg, lock


def _fsync_dir(d: Path) -> None:
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
