"""Search over one user's memory: vector and full-text candidates from
LanceDB, ranked by alpha*recency + beta*importance + gamma*similarity, then
the recall of every returned item recorded in one atomic update per table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from episodic.decay import effective_salience, retention
from episodic.models import now_utc
from episodic.retrieval import Candidate, ScoredItem, Weights, rank
from storage import filters
from storage.codec import to_aware
from storage.recalls import bump_recalls
from tasks.runtime import Runtime

KINDS = ("episodes", "facts", "reflections")
_TABLE = {"episodes": "episodes", "facts": "facts", "reflections": "reflections"}
_ID = {"episodes": "episode_id", "facts": "fact_id", "reflections": "reflection_id"}
_VEC = {"episodes": "centroid", "facts": "vector", "reflections": "vector"}
_KIND = {"episodes": "episode", "facts": "fact", "reflections": "reflection"}
_ACTIVE = {"episodes": "closed", "facts": "active", "reflections": "active"}


@dataclass(frozen=True)
class SearchOptions:
    k: int = 10
    kinds: tuple[str, ...] = KINDS
    weights: Weights = Weights()
    half_life_hours: float = 24.0
    tau_hours: float = 24.0 * 7
    pool: int = 4  # candidates fetched per channel = pool * k
    record: bool = True

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")
        if self.pool < 1:
            raise ValueError(f"pool must be at least 1, got {self.pool}")


def _candidates(
    rt: Runtime, user_id: str, kind: str, query: str, qvec: np.ndarray, n: int
) -> list[dict[str, Any]]:
    tbl = rt.store.table(_TABLE[kind])
    cond = filters.user(user_id) & filters.eq("status", _ACTIVE[kind])
    rows: dict[str, dict[str, Any]] = {}
    hits = (
        tbl.search(qvec, vector_column_name=_VEC[kind])
        .distance_type("cosine")
        .where(cond, prefilter=True)
        .limit(n)
        .to_list()
    )
    for r in hits:
        r["_sim"] = 1.0 - float(r.get("_distance", 1.0))
        rows[r[_ID[kind]]] = r
    if query.strip() and rt.store.has_fts(_TABLE[kind]):
        try:
            text_hits = (
                tbl.search(query, query_type="fts").where(cond, prefilter=True).limit(n).to_list()
            )
        except (ValueError, RuntimeError):
            text_hits = []
        for r in text_hits:
            rid = r[_ID[kind]]
            if rid not in rows:
                v = np.asarray(r[_VEC[kind]], dtype=np.float32)
                r["_sim"] = float(np.dot(v, qvec)) if v.size == qvec.size else 0.0
                rows[rid] = r
    return list(rows.values())


def _importance(kind: str, r: dict[str, Any], now: datetime, tau_hours: float) -> float:
    if kind != "episodes":
        return float(r.get("importance") or 0.0)
    last = to_aware(r.get("last_recalled_at")) or to_aware(r["closed_at"]) or now
    dt = max(0.0, (now - last).total_seconds() / 3600.0)
    recalls = int(r.get("recall_count") or 0)
    return effective_salience(
        float(r.get("salience") or 0), retention(dt, recalls, tau_hours), recalls
    )


def _last_access(kind: str, r: dict[str, Any], now: datetime) -> datetime:
    written = r.get("closed_at") if kind == "episodes" else r.get("created_at")
    return to_aware(r.get("last_recalled_at")) or to_aware(written) or now


def search(
    rt: Runtime,
    user_id: str,
    query: str,
    opts: SearchOptions | None = None,
    *,
    now: datetime | None = None,
) -> list[ScoredItem]:
    opts = opts or SearchOptions()
    now = now or now_utc()
    for kind in opts.kinds:
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}; choose from {', '.join(KINDS)}")
    qvec = rt.embedder.embed([query])[0].astype(np.float32)
    cands: list[Candidate] = []
    for kind in opts.kinds:
        for r in _candidates(rt, user_id, kind, query, qvec, opts.pool * opts.k):
            text = r.get("summary") or r["text"] if kind == "episodes" else r["text"]
            cands.append(
                Candidate(
                    item_id=r[_ID[kind]],
                    kind=_KIND[kind],  # type: ignore[arg-type]
                    text=str(text),
                    importance=_importance(kind, r, now, opts.tau_hours),
                    similarity=float(np.nan_to_num(r["_sim"])),
                    last_access=_last_access(kind, r, now),
                    recall_count=int(r.get("recall_count") or 0),
                )
            )
    ranked = rank(
        cands, now=now, weights=opts.weights, half_life_hours=opts.half_life_hours, k=opts.k
    )
    if opts.record and ranked:
        record_recall(rt, user_id, ranked, now)
    return ranked


def record_recall(rt: Runtime, user_id: str, items: Sequence[ScoredItem], now: datetime) -> int:
    """recall_count + 1 and last_recalled_at = now, one atomic update per table."""
    written = 0
    for kind in KINDS:
        ids = [i.item_id for i in items if i.kind == _KIND[kind]]
        written += bump_recalls(rt.store, _TABLE[kind], _ID[kind], user_id, ids, now)
    return written
