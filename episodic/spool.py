"""The capture spool: what an agent's hook hands over without waiting.

A hook call must not stall the agent, so it only records "this transcript
has new lines for this user" as one small file (`enqueue`, stdlib only: no
database, no model, no framework), and returns. Whoever holds the memory
open (the API server, `episodic capture drain`, a consolidate run) takes the
entries and captures the lines. One entry per (user, transcript): a second
hook call before the drain only refreshes it. An entry is claimed by an
atomic rename, so two drainers never capture the same entry at once, and a
drainer that dies leaves its claim to be retried (`stale` after a minute).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

SUFFIX = ".json"
CLAIMED = ".taking"
STALE_S = 60.0  # a claim older than this belonged to a drainer that died


def home_of(environ: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """EPISODIC_HOME as Settings reads it (default ~/.episodic), without pydantic."""
    value = environ.get("EPISODIC_HOME")
    return Path(value).expanduser() if value else Path.home() / ".episodic"


def spool_dir(home: Path) -> Path:
    return home / "spool"


@dataclass(frozen=True)
class Entry:
    user_id: str
    path: str
    fmt: str
    at: float
    file: Path


def enqueue(home: Path, user_id: str, path: str, fmt: str) -> Path:
    """Record that `path` has lines for `user_id`; one small atomic write."""
    d = spool_dir(home)
    d.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(f"{user_id}\0{path}\0{fmt}".encode()).hexdigest()[:32]
    body = json.dumps({"user_id": user_id, "path": path, "fmt": fmt, "at": time.time()})
    tmp = d / f".{name}.{os.getpid()}.tmp"
    tmp.write_text(body, encoding="utf-8")
    target = d / (name + SUFFIX)
    os.replace(tmp, target)
    return target


def claim(home: Path, now: float | None = None) -> list[Entry]:
    """Take every pending entry (and stale claims), oldest first."""
    d = spool_dir(home)
    if not d.is_dir():
        return []
    now = time.time() if now is None else now
    taken: list[Entry] = []
    for f in sorted(d.iterdir()):
        if f.suffix == CLAIMED and now - f.stat().st_mtime < STALE_S:
            continue  # another drainer's, still alive
        if f.suffix not in (SUFFIX, CLAIMED):
            continue
        mine = f.with_suffix(CLAIMED)
        try:
            os.replace(f, mine)  # atomic: one drainer wins
            os.utime(mine)
            taken.append(_entry(mine))
        except (OSError, ValueError):
            continue  # taken by another drainer, or unreadable: the next drain sees it
    return sorted(taken, key=lambda e: e.at)


def _entry(file: Path) -> Entry:
    """The entry `file` holds; ValueError when it holds none."""
    data = json.loads(file.read_text(encoding="utf-8"))
    try:
        return Entry(
            str(data["user_id"]), str(data["path"]), str(data["fmt"]), float(data["at"]), file
        )
    except (KeyError, TypeError) as e:
        raise ValueError(f"not a spool entry: {e}") from e


def waiting(home: Path) -> list[Entry]:
    """Every entry not captured yet (claimed ones too), oldest first, read
    without taking any."""
    d = spool_dir(home)
    if not d.is_dir():
        return []
    out: list[Entry] = []
    for f in d.iterdir():
        if f.suffix not in (SUFFIX, CLAIMED):
            continue
        try:
            out.append(_entry(f))
        except (OSError, ValueError):
            continue  # just taken by a drainer, or not an entry
    return sorted(out, key=lambda e: e.at)


def listing(home: Path, user_id: str | None = None) -> list[dict[str, object]]:
    """`waiting` as rows (the user's only, with `user_id`): each transcript,
    its format and how long it has waited, in seconds."""
    now = time.time()
    return [
        {"user_id": e.user_id, "path": e.path, "fmt": e.fmt, "waiting_s": round(now - e.at, 1)}
        for e in waiting(home)
        if user_id is None or e.user_id == user_id
    ]


def done(entry: Entry) -> None:
    entry.file.unlink(missing_ok=True)
