"""A user's active facts held in memory for one merge, so that finding the
candidates of a new fact costs a matrix product instead of a query, and the
plans of many episodes can be applied in one write.

The ranking is the store's (`Facts.candidates`): exact cosine top-k, fused
by reciprocal rank with the full-text ranking when an FTS index exists. The
mirror also sees the facts planned earlier in the same window, which the store
does not hold yet; full text, which only the store can rank, misses those."""

from __future__ import annotations

import numpy as np

from episodic.facts import ExistingFact
from episodic.retrieval import rrf_scores
from storage.facts import Facts, PlannedFact, new_fact_id


class ActiveFacts:
    def __init__(self, repo: Facts, user_id: str) -> None:
        self.repo = repo
        self.user_id = user_id
        self._text: dict[str, str] = {}
        self._vec: dict[str, np.ndarray | None] = {}
        for f in repo.list(user_id):
            self._add(f.fact_id, f.text, f.vector)
        self._mat: np.ndarray | None = None
        self._ids: list[str] = []
        self._fts = repo.store.has_fts("facts")

    def _add(self, fid: str, text: str, vec: list[float] | None) -> None:
        self._text[fid] = text
        self._vec[fid] = np.asarray(vec, dtype=np.float32) if vec else None
        self._mat = None

    def _matrix(self) -> tuple[list[str], np.ndarray]:
        if self._mat is None:
            pairs = [(f, v) for f, v in self._vec.items() if v is not None]
            self._ids = [f for f, _ in pairs]
            rows = [v for _, v in pairs]
            mat = np.stack(rows) if rows else np.zeros((0, 1), dtype=np.float32)
            norms = np.linalg.norm(mat, axis=1, keepdims=True) if rows else mat
            self._mat = np.divide(mat, norms, out=np.zeros_like(mat), where=norms > 0)
        return self._ids, self._mat

    def candidates(self, text: str, vec: np.ndarray | None, k: int = 5) -> list[ExistingFact]:
        ranked: list[list[str]] = []
        if vec is not None and np.any(vec):
            ids, mat = self._matrix()
            if ids:
                v = np.asarray(vec, dtype=np.float32)
                sims = mat @ (v / np.linalg.norm(v))
                order = np.argsort(-sims, kind="stable")[:k]
                ranked.append([ids[j] for j in order])
        if self._fts and text.strip():
            ranked.append([f for f in self.repo.fts_ids(self.user_id, text, k) if f in self._text])
        order_ids = [fid for fid, _ in rrf_scores(ranked)[:k]]
        return [ExistingFact(fact_id=f, text=self._text[f], vector=self._vec[f]) for f in order_ids]

    def apply(self, episode_id: str, plan: list[PlannedFact]) -> None:
        """What `Facts.apply` will do to the active set: new facts in, then closed ones out."""
        for p in plan:
            if p.event in ("ADD", "UPDATE") and p.new_text:
                fid = new_fact_id(self.user_id, episode_id, p.index)
                self._add(fid, p.new_text, p.vector)
        for p in plan:
            if p.event in ("UPDATE", "DELETE") and p.target_fact_id in self._text:
                del self._text[p.target_fact_id]
                del self._vec[p.target_fact_id]
                self._mat = None
