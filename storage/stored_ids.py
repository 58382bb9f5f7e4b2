"""Which turn ids raw may hold, answered from memory.

Every write asks which of its turns are stored already (duplicates are
counted, not stored twice); that IN-list query over raw was nine tenths of
an acknowledged add (11-33 ms at 30k turns). The raw log only grows, and a
Lance fragment never gains rows once written, so the ids of the fragments
seen so far, plus those of each new fragment, are every id raw holds. Each
id is kept as the 64-bit number its first 16 hex digits spell (8 bytes a
turn: 8 MB at a million). A miss is certain; a hit is confirmed by the
query, so a stale id (forgotten since) or a colliding prefix costs one
lookup and never a wrong answer.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage.db import Store

MERGE_AT = 65_536  # new keys held unsorted before they join the sorted array
_HEX = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEX[_c] = _i


def key(turn_id: str) -> int:
    """The id's number: its first 16 hex digits, or a hash of an id that is
    not hex (stable_id's are)."""
    head = turn_id[:16]
    if len(head) == 16 and all(c in "0123456789abcdef" for c in head):
        return int(head, 16)
    return int.from_bytes(hashlib.blake2b(turn_id.encode(), digest_size=8).digest(), "big")


def keys(ids: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """`key` of every id, vectorised where every id of a chunk starts with
    16 hex digits (all of stable_id's do)."""
    chunks = ids.chunks if isinstance(ids, pa.ChunkedArray) else [ids]
    out = [_chunk_keys(c) for c in chunks if len(c)]
    return np.concatenate(out) if out else np.empty(0, dtype=np.uint64)


def _chunk_keys(chunk: pa.Array) -> np.ndarray:
    heads = pc.utf8_slice_codeunits(chunk.cast(pa.string()), 0, 16)
    offsets = np.frombuffer(heads.buffers()[1], dtype=np.int32)[
        heads.offset : heads.offset + len(heads) + 1
    ]
    if heads.null_count == 0 and np.all(np.diff(offsets) == 16):
        data = np.frombuffer(heads.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
        nibbles = _HEX[data].reshape(-1, 16)
        if not (nibbles == 255).any():
            packed = (nibbles[:, 0::2] << 4) | nibbles[:, 1::2]
            return np.ascontiguousarray(packed).view(">u8").ravel().astype(np.uint64)
    return np.fromiter((key(str(s)) for s in chunk.to_pylist()), np.uint64, len(chunk))


class StoredIds:
    """The keys of every id in a table's `column`, kept up to the table's
    newest version by reading the fragments added since the last look."""

    def __init__(self, store: Store, table: str = "raw_turns", column: str = "turn_id") -> None:
        self.store = store
        self.table = table
        self.column = column
        self._lock = threading.Lock()
        self._ds: Any = None
        self._version: int | None = None
        self._fragments: set[int] = set()
        self._sorted = np.empty(0, dtype=np.uint64)
        self._recent: set[int] = set()

    def maybe(self, turn_ids: Sequence[str]) -> list[str]:
        """The ids of `turn_ids` the table may hold; the others it does not."""
        if not turn_ids:
            return []
        wanted = np.fromiter((key(t) for t in turn_ids), np.uint64, len(turn_ids))
        with self._lock:
            self._refresh()
            known = self._sorted
            if len(known):
                at = np.minimum(np.searchsorted(known, wanted), len(known) - 1)
                hit = (known[at] == wanted).tolist()
            else:
                hit = [False] * len(wanted)
            recent = self._recent
            return [
                t
                for t, k, h in zip(turn_ids, wanted.tolist(), hit, strict=True)
                if h or k in recent
            ]

    def _refresh(self) -> None:
        if self._ds is not None and self._ds.latest_version == self._version:
            return
        ds = self._ds = self.store.dataset(self.store.table(self.table))
        if ds.version == self._version:
            return
        frags = ds.get_fragments()
        new = [f for f in frags if f.fragment_id not in self._fragments]
        if new:
            got = ds.scanner(fragments=new, columns=[self.column]).to_table()
            self._add(keys(got.column(self.column)))
        # compaction replaces fragments: forget the old ids, keep what they held
        self._fragments = {f.fragment_id for f in frags}
        self._version = int(ds.version)

    def _add(self, new: np.ndarray) -> None:
        if len(new) + len(self._recent) < MERGE_AT:
            self._recent.update(new.tolist())
            return
        merged = np.concatenate([self._sorted, new, np.fromiter(self._recent, np.uint64)])
        self._sorted = np.unique(merged)
        self._recent = set()
