"""One user's facts or reflections in memory, as the search reads them, and
their episodes' spans. Small per user (tens to thousands of rows), so any
change rebuilds the derived indexes."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from episodic.dense import Dense
from episodic.lexical import Bm25, tokens
from episodic.retrieval import ITEM_SUBJECTS, rarer_terms
from storage.search import Match, fuse

_SUBJECT_TERMS = frozenset(t for w in ITEM_SUBJECTS for t in tokens(w))


class ItemSet:
    """Rows by id; the active ones searchable by BM25 on `text` and by cosine."""

    def __init__(self, id_column: str, dim: int) -> None:
        self.id_column = id_column
        self.dim = dim
        self.rows: dict[str, dict[str, Any]] = {}
        self._active: list[str] = []
        self._bm25 = Bm25()
        self._dense = Dense(dim)
        self._stale = True

    def apply(self, table: pa.Table, whole: bool) -> None:
        if whole:
            self.rows = {}
        for r in table.to_pylist():
            self.rows[str(r[self.id_column])] = r
        self._stale = True

    def _index(self) -> None:
        if not self._stale:
            return
        self._active = [i for i, r in self.rows.items() if r.get("status") == "active"]
        self._bm25 = Bm25()
        self._bm25.extend(tokens(str(self.rows[i]["text"] or "")) for i in self._active)
        self._dense = Dense(self.dim)
        vecs = [self.rows[i].get("vector") for i in self._active]
        if self._active and all(v is not None for v in vecs):
            self._dense.extend(np.asarray(vecs, dtype=np.float32))
        self._stale = False

    def search(self, query: str, qvec: np.ndarray, n: int, columns: Sequence[str]) -> list[Match]:
        """BM25 top-n and cosine top-n of the active rows, fused by the one RRF;
        query words (nearly) every one of the nearest rows holds (`rarer_terms`)
        and the subjects facts are written with (`ITEM_SUBJECTS`) are left out
        of the BM25 query."""
        self._index()
        if not self._active:
            return []
        near = self._dense.top(qvec, n) if len(self._dense) else []
        texts = [str(self.rows[self._active[i]]["text"] or "") for i, _ in near]
        terms = [t for t in tokens(rarer_terms(query, texts)) if t not in _SUBJECT_TERMS]
        lexical = self._bm25.top(terms, n)
        text_ids = [self._active[i] for i, _ in lexical]
        dense_ids = [self._active[i] for i, _ in near]
        cos = {self._active[i]: c for i, c in near}
        t_rank = {i: r for r, i in enumerate(text_ids, start=1)}
        d_rank = {i: r for r, i in enumerate(dense_ids, start=1)}
        keep = (self.id_column, *columns)
        return [
            Match(
                i,
                s,
                t_rank.get(i, 0),
                d_rank.get(i, 0),
                cos.get(i),
                {c: self.rows[i].get(c) for c in keep},
            )  # fmt: skip
            for i, s in fuse(text_ids, dense_ids)
        ]

    def nbytes(self) -> int:
        return len(self.rows) * (self.dim * 8 + 600)


class Spans:
    """The user's episodes by stream, to find the one holding a turn."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self._by_stream: dict[str, tuple[list[int], list[dict[str, Any]]]] = {}

    def apply(self, table: pa.Table, whole: bool) -> None:
        if whole:
            self.rows = {}
        for r in table.to_pylist():
            self.rows[str(r["episode_id"])] = r
        by: dict[str, list[dict[str, Any]]] = {}
        for r in self.rows.values():
            by.setdefault(str(r["stream_id"]), []).append(r)
        self._by_stream = {}
        for stream, rows in by.items():
            rows.sort(key=lambda r: int(r["first_seq"]))
            self._by_stream[stream] = ([int(r["first_seq"]) for r in rows], rows)

    def holding(self, stream_id: str, seq: int) -> dict[str, Any] | None:
        firsts, rows = self._by_stream.get(stream_id, ([], []))
        i = bisect_right(firsts, seq) - 1
        # a stream's episodes do not overlap; the one before is looked at too
        for r in rows[max(0, i - 1) : i + 1][::-1]:
            if int(r["first_seq"]) <= seq <= int(r["last_seq"]):
                return r
        return None

    def nbytes(self) -> int:
        return len(self.rows) * 400
