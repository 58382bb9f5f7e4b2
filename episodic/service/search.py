"""The one search over a user's memory (docs/retrieval.md): BM25 and cosine
candidates on turns, facts and reflections, fused by reciprocal rank, scored
on fixed scales (relevance + recency + importance), each turn hit returned
with its neighbours; the recalls are noted off the query path."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from episodic.models import Turn, now_utc
from episodic.retrieval import (
    CONTEXT_GAP_MINUTES,
    CONTEXT_TURNS,
    RUN_LINES,
    STALE_PENALTY,
    Components,
    ScoreWeights,
    context_rows,
    days_of,
    doc_before,
    fixed_score,
    hours_between,
    states_stale,
    turn_doc,
    turn_line,
)
from episodic.service.runtime import Runtime
from episodic.service.views import HIT_KINDS, Hit, HitTurn
from storage.codec import to_aware
from storage.search import (
    Match,
    TurnDocs,
    episodes_holding,
    raw_at,
    search_table,
    search_turns,
    stale_facts,
)

_TABLE = {"facts": "facts", "reflections": "reflections"}
_ID = {"facts": "fact_id", "reflections": "reflection_id"}


def _importance(r: dict[str, Any]) -> float:
    return float(r.get("importance") or 0.0)


def _event_time(kind: str, r: dict[str, Any]) -> datetime | None:
    """An item's time in the memory's own time (never processing time): a
    turn's event_ts, a fact's valid_from; a reflection's is its newest
    evidence among the candidates (`_reflection_times`)."""
    if kind == "turns":
        return to_aware(r.get("event_ts"))
    if kind == "facts":
        return to_aware(r.get("valid_from"))
    return None


# the shipped design (docs/retrieval.md): hybrid hits on turns, facts and reflections

# what ranking and the result need of a fact or reflection, read with its hit
_ROW = {
    kind: (
        "text",
        "importance",
        "recall_count",
        "last_recalled_at",
        "created_at",
        *(
            ("source_episode_ids", "valid_from")
            if kind == "facts"
            else ("evidence_episode_ids", "evidence_fact_ids")
        ),
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


def _speaker(t: Turn) -> str:
    name = t.meta.get("speaker")
    return str(name) if isinstance(name, str) and name else t.role


def _line(t: Turn) -> str:
    cap = t.meta.get("blip_caption")
    return turn_line(_speaker(t), t.text, cap if isinstance(cap, str) else None)


def _close(a: Turn, b: Turn) -> bool:
    return hours_between(a.event_ts, b.event_ts) * 60.0 <= CONTEXT_GAP_MINUTES


def _earlier(turns: Sequence[Turn], i: int) -> list[tuple[str, str]]:
    """The turns before turns[i], nearest first, while each is the seq just before
    the next and within the context gap of it."""
    out: list[tuple[str, str]] = []
    j = i
    while j > 0 and len(out) < RUN_LINES:
        prev, nxt = turns[j - 1], turns[j]
        if prev.seq != nxt.seq - 1 or not _close(prev, nxt):
            break
        out.append((_speaker(prev), _line(prev)))
        j -= 1
    return out


DOC_BATCH = 5_000  # documents per commit while catching up


def sync_turn_docs(rt: Runtime, user_id: str) -> int:
    """Write the search documents of the user's turns that have none yet.
    In sync (as many documents as turns: documents are unique per turn),
    that is two counts; otherwise one read of every stream's watermark."""
    return _sync_turn_docs(rt, user_id)[0]


def _sync_turn_docs(rt: Runtime, user_id: str) -> tuple[int, datetime | None]:
    """`sync_turn_docs`, and the user's newest event time (the streams' heads).
    Found in sync once, the check is skipped while none of the three tables
    has a new version (three version reads instead of two queries)."""
    docs = TurnDocs(rt.store)
    versions = (rt.raw.turns.version, rt.raw.heads.version, docs.table.version)
    known = rt.docs_synced.get(user_id)
    if known is not None and known[0] == versions:
        return 0, known[1]
    heads = rt.raw.streams(user_id)
    times = [ts for h in heads if (ts := to_aware(h.last_event_ts)) is not None]
    newest = max(times) if times else None
    if docs.count(user_id) >= sum(h.n_turns for h in heads):
        rt.docs_synced[user_id] = (versions, newest)
        return 0, newest
    marks = docs.watermarks(user_id)
    written = 0
    rows: list[dict[str, Any]] = []  # one commit per DOC_BATCH rows, not per stream
    for head in heads:
        mark = marks.get(head.stream_id, -1)
        if head.head_seq <= mark:
            continue
        since = max(-1, mark - RUN_LINES)  # the turns a new document may reach back to
        turns = rt.raw.read(user_id, head.stream_id, since, head.head_seq)
        for i, t in enumerate(turns):
            if t.seq <= mark:
                continue
            before = doc_before(_speaker(t), _earlier(turns, i))
            rows.append(
                {
                    "turn_id": t.turn_id,
                    "user_id": user_id,
                    "stream_id": t.stream_id,
                    "seq": t.seq,
                    "event_ts": t.event_ts,
                    "doc": turn_doc(_line(t), before, days_of(t.text, t.event_ts)),
                }
            )
        if len(rows) >= DOC_BATCH:
            written += docs.put(rows)
            rows = []
    written += docs.put(rows)
    return written, newest


def _contexts(
    rt: Runtime, user_id: str, hits: Sequence[dict[str, Any]]
) -> dict[str, list[HitTurn]]:
    """The returned turns of each turn hit, read in one query per stream."""
    want: dict[str, set[int]] = {}
    for r in hits:
        s = int(r["seq"])
        want.setdefault(str(r["stream_id"]), set()).update(
            range(s - CONTEXT_TURNS, s + CONTEXT_TURNS + 1)
        )
    rows = raw_at(rt.store, user_id, {s: sorted(v) for s, v in want.items()})
    out: dict[str, list[HitTurn]] = {}
    for r in hits:
        stream, seq = str(r["stream_id"]), int(r["seq"])
        near = [x for x in rows[stream] if abs(int(x["seq"]) - seq) <= CONTEXT_TURNS]
        at = next((i for i, x in enumerate(near) if int(x["seq"]) == seq), None)
        if at is None:
            continue
        times = [to_aware(x["event_ts"]) or now_utc() for x in near]
        idx = context_rows([int(x["seq"]) for x in near], times, at)
        out[str(r["turn_id"])] = [
            HitTurn(
                turn_id=str(near[i]["turn_id"]),
                stream_id=stream,
                seq=int(near[i]["seq"]),
                speaker=str(json.loads(near[i]["meta"] or "{}").get("speaker") or near[i]["role"]),
                text=str(near[i]["text"]),
                event_ts=times[i],
            )
            for i in idx
        ]
    return out


_Cand = tuple[Components, str, Match, dict[str, Any]]
# before scoring: kind, hit, row, importance (0-10)
_Raw = tuple[str, Match, dict[str, Any], float]


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


def _turn_candidates(ask: _Ask) -> tuple[list[_Raw], datetime | None]:
    rt, user_id, query, qvec, opts = ask.rt, ask.user_id, ask.query, ask.qvec, ask.opts
    _, newest = _sync_turn_docs(rt, user_id)
    hits = search_turns(rt.store, user_id, rt.embedder.name, query, qvec, opts.pool)
    # text hits carry their position; only cosine-only hits are looked up
    meta = {h.item_id: h.row for h in hits if h.row and "seq" in h.row}
    missing = [h.item_id for h in hits if h.item_id not in meta]
    meta.update({r["turn_id"]: r for r in TurnDocs(rt.store).by_ids(user_id, missing)})
    by_stream: dict[str, list[int]] = {}
    for r in meta.values():
        by_stream.setdefault(str(r["stream_id"]), []).append(int(r["seq"]))
    eps = episodes_holding(rt.store, user_id, by_stream)
    out: list[_Raw] = []
    for h in hits:
        found = meta.get(h.item_id)
        if found is None:
            continue
        ep = eps.get((str(found["stream_id"]), int(found["seq"])))
        r = {**found, "episode": ep}
        sal = float(ep["salience"] or 0) if ep else 0.0
        out.append(("turns", h, r, sal))
    return out, newest


def _row_candidates(ask: _Ask, kind: str) -> list[_Raw]:
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
    return [(kind, h, h.row, _importance(h.row)) for h in hits if h.row is not None]


def _own_line(doc: str) -> str:
    """A turn document's own line (the last: the turn before it comes first)."""
    return doc.rsplit("\n", 1)[-1]


def _score_all(
    raw: Sequence[_Raw],
    stale: Sequence[tuple[str, str | None]],
    at: datetime,
    w: ScoreWeights,
) -> list[_Cand]:
    """Every candidate on the fixed scales, in the memory's own time `at`:
    - recency from event time (turn event_ts, fact valid_from, a reflection's
      newest evidence among the candidates; none found: 0);
    - a turn that states a superseded value loses `STALE_PENALTY`;
    - a reflection never outranks its best-scored evidence among the candidates."""
    times: dict[str, datetime] = {}  # episode or fact id -> newest event time
    for kind, h, r, _ in raw:
        t = _event_time(kind, r)
        if t is None:
            continue
        if kind == "turns" and r.get("episode"):
            key = str(r["episode"]["episode_id"])
            times[key] = max(times.get(key, t), t)
        elif kind == "facts":
            times[h.item_id] = t
            for ep in r.get("source_episode_ids") or []:
                times[str(ep)] = max(times.get(str(ep), t), t)
    out: list[_Cand] = []
    best: dict[str, float] = {}  # evidence id -> its best score
    reflections: list[tuple[_Raw, list[str]]] = []
    for item in raw:
        kind, h, r, imp = item
        if kind == "reflections":
            ev = [str(x) for x in (r.get("evidence_episode_ids") or [])]
            ev += [str(x) for x in (r.get("evidence_fact_ids") or [])]
            reflections.append((item, ev))
            continue
        t = _event_time(kind, r)
        comp = fixed_score(h.rrf, t or at, imp, at, w)
        if t is None:
            comp = _without_recency(comp, w)
        if kind == "turns" and stale and states_stale(_own_line(str(r.get("doc") or "")), stale):
            comp = _penalised(comp, STALE_PENALTY)
        out.append((comp, kind, h, r))
        keys = [h.item_id]
        if kind == "turns" and r.get("episode"):
            keys.append(str(r["episode"]["episode_id"]))
        for key in keys:
            best[key] = max(best.get(key, comp.score), comp.score)
    for (kind, h, r, imp), ev in reflections:
        known = [times[e] for e in ev if e in times]
        comp = fixed_score(h.rrf, max(known) if known else at, imp, at, w)
        if not known:
            comp = _without_recency(comp, w)
        cap = max((best[e] for e in ev if e in best), default=None)
        if cap is not None and comp.score >= cap:
            comp = _penalised(comp, comp.score - cap + 1e-6)
        out.append((comp, kind, h, r))
    return out


def _without_recency(c: Components, w: ScoreWeights) -> Components:
    return Components(
        c.relevance, 0.0, c.importance, round(c.score - w.recency_weight * c.recency, 6)
    )


def _penalised(c: Components, by: float) -> Components:
    return Components(c.relevance, c.recency, c.importance, round(c.score - by, 6))


def search_memory(
    rt: Runtime,
    user_id: str,
    query: str,
    opts: MemoryOptions | None = None,
    *,
    now: datetime | None = None,
) -> list[Hit]:
    """Hybrid hits on turns, facts and reflections in one fixed-scale ranking."""
    opts = opts or MemoryOptions()
    now = now or now_utc()
    qvec = rt.embedder.embed([query])[0].astype(np.float32)
    # the kinds' reads overlap: LanceDB runs them outside the GIL
    ask = _Ask(rt, user_id, query, qvec, opts, now)
    turn_part = _READERS.submit(_turn_candidates, ask) if "turns" in opts.kinds else None
    row_parts = [
        _READERS.submit(_row_candidates, ask, kind)
        for kind in HIT_KINDS
        if kind != "turns" and kind in opts.kinds
    ]
    stale_part = _READERS.submit(stale_facts, rt.store, user_id)
    raw: list[_Raw] = [c for part in row_parts for c in part.result()]
    newest = None
    if turn_part is not None:
        turn_raw, newest = turn_part.result()
        raw = turn_raw + raw
    # the memory's own time: its newest event, never later than the clock
    at = min(now, newest) if newest is not None else now
    cands = _score_all(raw, stale_part.result(), at, opts.weights)
    cands.sort(key=lambda c: (-c[0].score, c[2].item_id))
    budget = opts.max_turns if opts.max_turns is not None else 3 * opts.k
    head = [c[3] for c in cands if c[1] == "turns"][: max(opts.k, budget)]
    contexts = _contexts(rt, user_id, head) if head else {}
    out: list[Hit] = []
    returned: set[str] = set()
    for comp, kind, h, r in cands:
        if len(out) >= opts.k or (opts.max_turns is not None and len(returned) >= opts.max_turns):
            break
        turns: list[HitTurn] = []
        episode_id = None
        seq = None
        provenance: list[str] = []
        if kind == "turns":
            if h.item_id not in contexts:
                contexts.update(_contexts(rt, user_id, [r]))
            near = contexts.get(h.item_id, [])
            turns = [t for t in near if t.turn_id not in returned]
            if not turns:
                continue  # already returned as the context of a better hit
            if opts.max_turns is not None:
                turns = turns[: opts.max_turns - len(returned)]
            returned.update(t.turn_id for t in turns)
            episode_id = str(r["episode"]["episode_id"]) if r.get("episode") else None
            # the hit's own text, also when an earlier hit already returned it
            text = next((t.text for t in near if t.turn_id == h.item_id), "")
            seq = int(r["seq"])
        else:
            text = str(r["text"])
            col = "source_episode_ids" if kind == "facts" else "evidence_episode_ids"
            provenance = [str(x) for x in (r.get(col) or [])]
            episode_id = provenance[0] if provenance else None
        out.append(
            Hit(
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
                seq=seq,
            )
        )
    if opts.record and out:
        _record_hits(rt, user_id, out, now)
    return out


def _record_hits(rt: Runtime, user_id: str, hits: Sequence[Hit], now: datetime) -> None:
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
