"""Capture a growing transcript: append only the lines after the stored byte
offset, then store the new offset. The offset is written after the append
commits; losing it (or a crash in between) sends lines again, which raw's
turn-id dedup makes harmless. Only whole lines are read: a line the agent is
still writing waits for the next capture. A file shorter than its offset, or
whose bytes before the offset no longer match their stored fingerprint, was
rewritten or replaced: it is read again from the start. Only regular files
are read: a FIFO or a device would block the agent's hook."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from episodic.errors import IngestError
from episodic.ingest import regular_file
from episodic.service.ingest import IngestReport, ingest_file
from storage.offsets import Offsets
from storage.raw import RawLog

BLOCK = 1 << 16
PRINT = 4096  # bytes before the offset whose hash tells a grown file from a rewritten one


@dataclass
class CaptureReport(IngestReport):
    """An ingest of the lines between two byte offsets of a growing file."""

    start: int = 0
    end: int = 0
    lines: int = 0
    restarted: bool = False  # the file was rewritten: read again from its start


def last_line_end(path: Path, start: int, size: int) -> int:
    """The byte after the last newline in [start, size), or `start` if none."""
    with path.open("rb") as f:
        pos = size
        while pos > start:
            lo = max(start, pos - BLOCK)
            f.seek(lo)
            block = f.read(pos - lo)
            i = block.rfind(b"\n")
            if i >= 0:
                return lo + i + 1
            pos = lo
    return start


def fingerprint(path: Path, offset: int) -> str:
    """A hash of the (up to) PRINT bytes before `offset`, and of how many."""
    lo = max(0, offset - PRINT)
    with path.open("rb") as f:
        f.seek(lo)
        data = f.read(offset - lo)
    return hashlib.sha256(str(offset).encode() + b":" + data).hexdigest()[:32]


def resolved_file(path: Path) -> tuple[Path, int]:
    """The resolved path of a regular file and its size, else IngestError."""
    try:
        resolved = Path(path).resolve()
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise IngestError(repr(str(path))[1:-1], f"cannot read: {e}") from None
    return resolved, regular_file(resolved).st_size


def count_lines(path: Path, start: int, end: int) -> int:
    n = 0
    with path.open("rb") as f:
        f.seek(start)
        left = end - start
        while left > 0:
            block = f.read(min(BLOCK * 16, left))
            if not block:
                break
            n += block.count(b"\n")
            left -= len(block)
    return n


def capture_file(
    raw: RawLog,
    offsets: Offsets,
    path: Path,
    fmt: str,
    *,
    user_id: str,
    max_turn_chars: int = 200_000,
    override_user: bool = True,
) -> CaptureReport:
    """`user_id` owns the offset; it is also every turn's user unless
    `override_user` is False (a generic file naming its users per line)."""
    path, size = resolved_file(path)
    key = str(path)
    stored = offsets.get(user_id, key)
    start, line = stored.offset, stored.line
    restarted = start > size or (
        start > 0 and bool(stored.fingerprint) and fingerprint(path, start) != stored.fingerprint
    )
    if restarted:
        start, line = 0, 1
    end = last_line_end(path, start, size)
    if end <= start:
        return CaptureReport(key, start=start, end=start, restarted=restarted)
    report = ingest_file(
        raw,
        path,
        fmt,
        user_id=user_id if override_user else None,
        max_turn_chars=max_turn_chars,
        window=(start, line, end),
    )
    lines = count_lines(path, start, end)
    # after the append: never ahead of raw
    offsets.set(user_id, key, end, line + lines, fingerprint(path, end))
    return CaptureReport(**vars(report), start=start, end=end, lines=lines, restarted=restarted)
