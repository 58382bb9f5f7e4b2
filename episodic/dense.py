"""Cosine top-k over one user's vectors, in memory. Rows are appended in the
order of their numbers, each stored unit-length in float32: one BLAS
matrix-vector product per query (float16 halved the memory but converting it
per query took 15 ms for 10,000 rows of 384, ten times the product)."""

from __future__ import annotations

import numpy as np

NORM_ROWS = 1024  # rows normalised at a time: a 1.5 MB temporary, not one the size of the set


class Dense:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._rows = np.zeros((0, dim), dtype=np.float32)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def reserve(self, rows: int) -> None:
        """Room for `rows` rows in all, so appends in parts copy nothing."""
        if rows > len(self._rows):
            grown = np.zeros((rows, self.dim), np.float32)
            grown[: self._n] = self._rows[: self._n]
            self._rows = grown

    def extend(self, vectors: np.ndarray) -> None:
        """Append rows (n, dim), normalised here."""
        if not len(vectors):
            return
        raw = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        need = self._n + len(raw)
        if need > len(self._rows):  # grow by half again: appends stay amortised O(1)
            self.reserve(max(need, len(self._rows) * 3 // 2 + 64))
        for at in range(0, len(raw), NORM_ROWS):  # normalised in place, in parts:
            part = raw[at : at + NORM_ROWS]  # no temporary as large as the rows
            v = self._rows[self._n + at : self._n + at + len(part)]
            v[...] = part
            norms = np.linalg.norm(v, axis=1, keepdims=True)
            v /= np.where(norms > 0.0, norms, 1.0)
        self._n = need

    def cosines(self, q: np.ndarray) -> np.ndarray:
        qv = np.asarray(q, dtype=np.float32).reshape(self.dim)
        norm = float(np.linalg.norm(qv))
        qv = qv / norm if norm > 0.0 else qv
        out: np.ndarray = self._rows[: self._n] @ qv
        return out

    def top(self, q: np.ndarray, k: int, rows: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The `k` rows (of `rows`, default all) nearest `q` by cosine, best first."""
        return best(self.cosines(q), k, rows)

    def nbytes(self) -> int:
        return int(self._rows.nbytes)


def best(scores: np.ndarray, k: int, rows: np.ndarray | None = None) -> list[tuple[int, float]]:
    """The `k` rows (of `rows`, default all) of highest score, best first, ties by row."""
    pool = np.arange(len(scores)) if rows is None else rows
    if len(pool) > k:
        pool = pool[np.argpartition(-scores[pool], k - 1)[:k]]
    order = sorted(pool.tolist(), key=lambda i: (-scores[i], i))
    return [(i, float(scores[i])) for i in order]
