"""Adds acknowledged from the ingest journal (issue 29, item 1): the answer
comes after one fsync, the turns reach LanceDB just after, a read waits for
them, counts are exact while they are pending, and a process killed between
the fsync and the store loses nothing: the next Memory opened on the store
stores the journal, and a client's retry with the same Idempotency-Key gets
the first answer and writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from episodic.service.memory import Memory
from storage.frames import frame
from storage.journal import journal_dir
from tests.integration.helpers import settings_at


def _batch(tag: str, n: int = 5) -> list[dict[str, Any]]:
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "text": f"{tag} turn {i}: the {tag}ville deploy notes",
            "ts": f"2025-03-01T10:{i:02d}:00Z",
            "stream_id": tag,
        }
        for i in range(n)
    ]


def _segments(home: Path) -> list[Path]:
    d = journal_dir(str(home / "lancedb"))
    assert d is not None
    return sorted(p for p in d.iterdir() if p.suffix in (".open", ".sealed")) if d.is_dir() else []


def test_journaled_adds_are_counted_stored_and_found(tmp_path: Path) -> None:
    memory = Memory(settings_at(tmp_path), journal=True)
    receipts: dict[str, Any] = {}

    def add(tag: str) -> None:
        receipts[tag] = memory.add("u", _batch(tag), idempotency_key=f"key-{tag}")

    threads = [threading.Thread(target=add, args=(t,)) for t in ("a", "b", "c", "d")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.accepted == 5 and r.duplicates == 0 for r in receipts.values())
    again = memory.add("u", _batch("a"))  # no key: the same turns, pending or stored
    assert (again.accepted, again.duplicates) == (0, 5)
    retry = memory.add("u", _batch("b"), idempotency_key="key-b")
    assert retry == receipts["b"]  # the first answer
    hits = memory.search("u", "cville deploy", k=3, kinds=("turns",))
    assert hits and "cville" in hits[0].text  # found once the add has answered
    memory.close()
    assert frame(memory.rt.store, "raw_turns", "u").num_rows == 20
    assert frame(memory.rt.store, "ingest_receipts", "u").num_rows == 5
    assert _segments(tmp_path) == []  # stored text leaves the journal


CHILD = """
import json, sys
from episodic.service.memory import Memory
from episodic.config import Settings
memory = Memory(Settings(home=sys.argv[1], embedder="hash", llm="offline"), journal=True)
turns = json.loads(sys.argv[2])
receipt = memory.add("u", turns, idempotency_key="k1")
print(json.dumps(receipt.as_json()), flush=True)
memory.add("u", [dict(t, text=t["text"] + " again") for t in turns])
memory.close()
"""


def _child(home: Path, point: str, turns: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EPISODIC_CRASHPOINT": point}
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(home), json.dumps(turns)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_killed_after_the_fsync_the_retry_gets_the_first_answer(tmp_path: Path) -> None:
    turns = _batch("x")
    died = _child(tmp_path, "journal_after_fsync", turns)
    assert died.returncode == 137 and died.stdout == ""  # durable, never answered
    assert len(_segments(tmp_path)) == 1
    memory = Memory(settings_at(tmp_path), journal=True)  # stores what the dead one journaled
    assert _segments(tmp_path) == []
    assert frame(memory.rt.store, "raw_turns", "u").num_rows == 5
    retry = memory.add("u", turns, idempotency_key="k1")
    assert (retry.accepted, retry.duplicates) == (5, 0)  # the answer the client never got
    plain = memory.add("u", turns)
    assert (plain.accepted, plain.duplicates) == (0, 5)
    memory.close()
    assert frame(memory.rt.store, "raw_turns", "u").num_rows == 5


def test_killed_before_the_store_the_answered_turns_are_kept(tmp_path: Path) -> None:
    turns = _batch("y")
    died = _child(tmp_path, "journal_before_store", turns)
    assert died.returncode == 137
    assert _segments(tmp_path)  # answered (or about to be), only in the journal
    memory = Memory(settings_at(tmp_path), journal=True)
    stored = [r["text"] for r in frame(memory.rt.store, "raw_turns", "u").to_pylist()]
    # every answered turn is kept, once; the child's second add may have reached
    # the journal too before the kill (its store thread lags under load): kept whole
    assert len(stored) == len(set(stored))
    assert set(stored) >= {t["text"] for t in turns}
    later = set(stored) - {t["text"] for t in turns}
    assert later in (set(), {t["text"] + " again" for t in turns})
    if died.stdout:  # the answer got out before the process died: the retry repeats it
        first = json.loads(died.stdout)
        assert memory.add("u", turns, idempotency_key="k1").as_json() == first
    memory.close()
    assert _segments(tmp_path) == []
    d = journal_dir(str(tmp_path / "lancedb"))
    assert d is not None and not list(d.glob("*.lock"))  # no lock file left behind


FULL_DISK = """
import json, resource, signal, sys
from pathlib import Path
from storage import journal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
seg = journal.Segment(Path(sys.argv[1]))
seg.append([{"n": 1}, {"n": 2}])
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (seg.path.stat().st_size + 20, hard))
try:
    seg.append([{"n": 3, "pad": "x" * 4096}])  # written in part, then refused
    print("no error")
except OSError:
    pass
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
seg.append([{"n": 4}])
print(json.dumps([r["n"] for r in journal.read(seg.path)]))
"""


def test_a_torn_frame_ends_a_segment_and_a_failed_write_leaves_none(tmp_path: Path) -> None:
    from storage import journal

    seg = journal.Segment(tmp_path)
    seg.append([{"n": 1}, {"n": 2}])
    with seg.path.open("ab") as f:  # what a crash in the middle of a write leaves
        f.write(b'\x40\x00\x00\x00\x00\x00\x00\x00{"n": 3')
    assert [r["n"] for r in journal.read(seg.path)] == [1, 2]
    # a write the disk refuses halfway (a file size limit stands in for a full disk)
    out = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(tmp_path / "full")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [1, 2, 4]  # the record after it is not lost
