"""Search over one user's memory: vector and full-text candidates from
LanceDB, ranked by alpha*recency + beta*importance + gamma*similarity, then
the recall of every returned item recorded in one atomic update per table."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import numpy as np

from episodic.decay import effective_salience, retention
from episodic.models import Turn, now_utc
from episodic.retrieval import (
    CONTEXT_GAP_MINUTES,
    CONTEXT_TURNS,
    Candidate,
    Components,
    ScoredItem,
    ScoreWeights,
    Weights,
    context_rows,
    fixed_score,
    hours_between,
    rank,
    turn_doc,
    turn_line,
)
from storage import filters
from storage.codec import to_aware
from storage.recalls import bump_recalls
from storage.search import (
    Hit,
    TurnDocs,
    episodes_holding,
    raw_at,
    search_table,
    search_turns,
)
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


# --- the shipped design: hybrid hits on turns, facts and reflections ----------------
# (docs/retrieval.md). The functions above rank episodes as units, the design that
# LoCoMo dev5 measured at .507 evidence recall; `search_memory` is what `episodic
# search` uses.

HIT_KINDS = ("turns", "facts", "reflections")
# what ranking and the result need of a fact or reflection, read with its hit
_ROW = {
    kind: (
        "text",
        "importance",
        "recall_count",
        "last_recalled_at",
        "created_at",
        "source_episode_ids" if kind == "facts" else "evidence_episode_ids",
    )
    for kind in ("facts", "reflections")
}
_HIT_KIND = {"turns": "turn", "facts": "fact", "reflections": "reflection"}


@dataclass(frozen=True)
class MemoryOptions:
    k: int = 10  # results returned
    kinds: tuple[str, ...] = HIT_KINDS
    weights: ScoreWeights = ScoreWeights()
    pool: int = 100  # candidates per channel (BM25, cosine) and per kind
    max_turns: int | None = None  # stop once the results hold this many turns
    record: bool = True

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")
        if self.pool < 1:
            raise ValueError(f"pool must be at least 1, got {self.pool}")
        for kind in self.kinds:
            if kind not in HIT_KINDS:
                raise ValueError(f"unknown kind {kind!r}; choose from {', '.join(HIT_KINDS)}")


@dataclass(frozen=True)
class MemoryHit:
    """One result: what matched, the turns it returns, and every part of its score."""

    kind: str  # turn | fact | reflection
    item_id: str
    text: str
    turns: list[dict[str, Any]]  # the returned turns: hit first, then its neighbours
    episode_id: str | None
    provenance: list[str]  # episodes a fact or reflection cites
    score: float
    relevance: float
    recency: float
    importance: float
    rrf: float
    text_rank: int
    dense_rank: int
    cosine: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _speaker(t: Turn) -> str:
    name = t.meta.get("speaker")
    return str(name) if isinstance(name, str) and name else t.role


def _line(t: Turn) -> str:
    cap = t.meta.get("blip_caption")
    return turn_line(_speaker(t), t.text, cap if isinstance(cap, str) else None)


def _close(a: Turn, b: Turn) -> bool:
    return hours_between(a.event_ts, b.event_ts) * 60.0 <= CONTEXT_GAP_MINUTES


def sync_turn_docs(rt: Runtime, user_id: str) -> int:
    """Write the search documents of the user's turns that have none yet.
    In sync (as many documents as turns: documents are unique per turn),
    that is two counts; otherwise one read of every stream's watermark."""
    docs = TurnDocs(rt.store)
    heads = rt.raw.streams(user_id)
    if docs.count(user_id) >= sum(h.n_turns for h in heads):
        return 0
    marks = docs.watermarks(user_id)
    written = 0
    for head in heads:
        mark = marks.get(head.stream_id, -1)
        if head.head_seq <= mark:
            continue
        turns = rt.raw.read(user_id, head.stream_id, max(-1, mark - 1), head.head_seq)
        rows = []
        for i, t in enumerate(turns):
            if t.seq <= mark:
                continue
            prev = turns[i - 1] if i > 0 and turns[i - 1].seq == t.seq - 1 else None
            before = _line(prev) if prev is not None and _close(prev, t) else None
            rows.append(
                {
                    "turn_id": t.turn_id,
                    "user_id": user_id,
                    "stream_id": t.stream_id,
                    "seq": t.seq,
                    "event_ts": t.event_ts,
                    "doc": turn_doc(_line(t), before),
                }
            )
        written += docs.put(rows)
    return written


def _contexts(
    rt: Runtime, user_id: str, hits: Sequence[dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """The returned turns of each turn hit, read in one query per stream."""
    want: dict[str, set[int]] = {}
    for r in hits:
        s = int(r["seq"])
        want.setdefault(str(r["stream_id"]), set()).update(
            range(s - CONTEXT_TURNS, s + CONTEXT_TURNS + 1)
        )
    rows = raw_at(rt.store, user_id, {s: sorted(v) for s, v in want.items()})
    out: dict[str, list[dict[str, Any]]] = {}
    for r in hits:
        stream, seq = str(r["stream_id"]), int(r["seq"])
        near = [x for x in rows[stream] if abs(int(x["seq"]) - seq) <= CONTEXT_TURNS]
        at = next((i for i, x in enumerate(near) if int(x["seq"]) == seq), None)
        if at is None:
            continue
        times = [to_aware(x["event_ts"]) or now_utc() for x in near]
        idx = context_rows([int(x["seq"]) for x in near], times, at)
        out[str(r["turn_id"])] = [
            {
                "turn_id": str(near[i]["turn_id"]),
                "stream_id": stream,
                "seq": int(near[i]["seq"]),
                "speaker": str(
                    json.loads(near[i]["meta"] or "{}").get("speaker") or near[i]["role"]
                ),
                "text": str(near[i]["text"]),
                "event_ts": times[i].isoformat(),
            }
            for i in idx
        ]
    return out


_Cand = tuple[Components, str, Hit, dict[str, Any]]


# shared by concurrent searches (the API's request threads): room for several
# searches' reads at once, which on object storage wait on the network
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=4 * len(HIT_KINDS), thread_name_prefix="episodic-search")


_READERS = _pool()


def _fresh_readers() -> None:
    # a forked child inherits the pool but not its threads: it would wait forever
    global _READERS
    _READERS = _pool()


os.register_at_fork(after_in_child=_fresh_readers)


@dataclass(frozen=True)
class _Ask:
    """One search, as its readers see it."""

    rt: Runtime
    user_id: str
    query: str
    qvec: np.ndarray
    opts: MemoryOptions
    now: datetime


def _turn_candidates(ask: _Ask) -> list[_Cand]:
    rt, user_id, query, qvec, opts, now = (
        ask.rt,
        ask.user_id,
        ask.query,
        ask.qvec,
        ask.opts,
        ask.now,
    )
    sync_turn_docs(rt, user_id)
    hits = search_turns(rt.store, user_id, rt.embedder.name, query, qvec, opts.pool)
    # text hits carry their position; only cosine-only hits are looked up
    meta = {h.item_id: h.row for h in hits if h.row and "seq" in h.row}
    missing = [h.item_id for h in hits if h.item_id not in meta]
    meta.update({r["turn_id"]: r for r in TurnDocs(rt.store).by_ids(user_id, missing)})
    by_stream: dict[str, list[int]] = {}
    for r in meta.values():
        by_stream.setdefault(str(r["stream_id"]), []).append(int(r["seq"]))
    eps = episodes_holding(rt.store, user_id, by_stream)
    out: list[_Cand] = []
    for h in hits:
        found = meta.get(h.item_id)
        if found is None:
            continue
        ep = eps.get((str(found["stream_id"]), int(found["seq"])))
        r = {**found, "episode": ep}
        sal = float(ep["salience"] or 0) if ep else 0.0
        ts = to_aware(r["event_ts"]) or now
        out.append((fixed_score(h.rrf, ts, sal, now, opts.weights), "turns", h, r))
    return out


def _row_candidates(ask: _Ask, kind: str) -> list[_Cand]:
    hits = search_table(
        ask.rt.store,
        _TABLE[kind],
        _ID[kind],
        ask.user_id,
        ask.query,
        ask.qvec,
        ask.opts.pool,
        columns=_ROW[kind],
    )
    out: list[_Cand] = []
    for h in hits:
        if h.row is None:
            continue
        last = _last_access(kind, h.row, ask.now)
        imp = _importance(kind, h.row, ask.now, 24.0 * 7)
        out.append((fixed_score(h.rrf, last, imp, ask.now, ask.opts.weights), kind, h, h.row))
    return out


def search_memory(
    rt: Runtime,
    user_id: str,
    query: str,
    opts: MemoryOptions | None = None,
    *,
    now: datetime | None = None,
) -> list[MemoryHit]:
    """Hybrid hits on turns, facts and reflections in one fixed-scale ranking."""
    opts = opts or MemoryOptions()
    now = now or now_utc()
    qvec = rt.embedder.embed([query])[0].astype(np.float32)
    # the kinds' reads overlap: LanceDB runs them outside the GIL
    ask = _Ask(rt, user_id, query, qvec, opts, now)
    parts = [
        _READERS.submit(_turn_candidates, ask)
        if kind == "turns"
        else _READERS.submit(_row_candidates, ask, kind)
        for kind in HIT_KINDS
        if kind in opts.kinds
    ]
    cands = [c for part in parts for c in part.result()]
    cands.sort(key=lambda c: (-c[0].score, c[2].item_id))
    budget = opts.max_turns if opts.max_turns is not None else 3 * opts.k
    head = [c[3] for c in cands if c[1] == "turns"][: max(opts.k, budget)]
    contexts = _contexts(rt, user_id, head) if head else {}
    out: list[MemoryHit] = []
    returned: set[str] = set()
    for comp, kind, h, r in cands:
        if len(out) >= opts.k or (opts.max_turns is not None and len(returned) >= opts.max_turns):
            break
        turns: list[dict[str, Any]] = []
        episode_id = None
        provenance: list[str] = []
        if kind == "turns":
            if h.item_id not in contexts:
                contexts.update(_contexts(rt, user_id, [r]))
            near = contexts.get(h.item_id, [])
            turns = [t for t in near if t["turn_id"] not in returned]
            if not turns:
                continue  # already returned as the context of a better hit
            if opts.max_turns is not None:
                turns = turns[: opts.max_turns - len(returned)]
            returned.update(t["turn_id"] for t in turns)
            episode_id = str(r["episode"]["episode_id"]) if r.get("episode") else None
            # the hit's own text, also when an earlier hit already returned it
            text = next((t["text"] for t in near if t["turn_id"] == h.item_id), "")
        else:
            text = str(r["text"])
            col = "source_episode_ids" if kind == "facts" else "evidence_episode_ids"
            provenance = [str(x) for x in (r.get(col) or [])]
            episode_id = provenance[0] if provenance else None
        out.append(
            MemoryHit(
                kind=_HIT_KIND[kind],
                item_id=h.item_id,
                text=text,
                turns=turns,
                episode_id=episode_id,
                provenance=provenance,
                score=comp.score,
                relevance=comp.relevance,
                recency=comp.recency,
                importance=comp.importance,
                rrf=round(h.rrf, 6),
                text_rank=h.text_rank,
                dense_rank=h.dense_rank,
                cosine=None if h.cosine is None else round(h.cosine, 6),
            )
        )
    if opts.record and out:
        _record_hits(rt, user_id, out, now)
    return out


def _record_hits(rt: Runtime, user_id: str, hits: Sequence[MemoryHit], now: datetime) -> None:
    """Note the recalls of the facts and reflections returned, and of the
    episodes that the returned turns came from (decay reads them); the
    runtime's recall log writes them within a second (`rt.recalls.flush()`
    writes them now)."""
    for kind, table, column in (
        ("fact", "facts", "fact_id"),
        ("reflection", "reflections", "reflection_id"),
    ):
        ids = [h.item_id for h in hits if h.kind == kind]
        if ids:
            rt.recalls.note(table, column, user_id, ids, now)
    eps = [h.episode_id for h in hits if h.kind == "turn" and h.episode_id]
    if eps:
        rt.recalls.note("episodes", "episode_id", user_id, eps, now)
