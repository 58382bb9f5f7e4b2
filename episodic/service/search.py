"""The one search over a user's memory (docs/retrieval.md): BM25 and cosine
candidates on turns, facts and reflections, fused by reciprocal rank, scored
on fixed scales (relevance + recency + importance), a turn hit returned
alone (`CONTEXT_TURNS`); the recalls are noted off the query path."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from episodic import expansion
from episodic.lexical import tokens
from episodic.models import now_utc
from episodic.retrieval import (
    CONTEXT_TURNS,
    ITEM_COSINE_FLOOR,
    ITEM_MEANING_FLOOR,
    OTHER_SPEAKER,
    PASSAGE_MIN_TURNS,
    PASSAGE_TURNS,
    STALE_PENALTY,
    Components,
    ScoreWeights,
    StaleValues,
    context_rows,
    fixed_score,
    named_speaker,
    naming_the_user,
    without_speakers,
)
from episodic.service.item_set import ItemSet
from episodic.service.runtime import Runtime
from episodic.service.turn_set import TurnSet
from episodic.service.views import HIT_KINDS, Hit, HitTurn
from episodic.service.working_set import UserMemory
from storage.codec import to_aware
from storage.search import Match, fuse


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
TIE_ORDER = {"facts": 0, "reflections": 1, "turns": 2}


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
        if not self.kinds:
            raise ValueError(f"no kind asked for; choose from {', '.join(HIT_KINDS)}")
        for kind in self.kinds:
            if kind not in HIT_KINDS:
                raise ValueError(f"unknown kind {kind!r}; choose from {', '.join(HIT_KINDS)}")


_Cand = tuple[Components, str, Match, dict[str, Any]]
# before scoring: kind, hit, row, importance (0-10)
_Raw = tuple[str, Match, dict[str, Any], float]


def _turn_candidates(
    um: UserMemory, query: str, qvec: np.ndarray, n: int, named: str | None = None
) -> list[_Raw]:
    """BM25 top-n, cosine top-n and the cosine spread to each turn's
    neighbours top-n (`TurnSet.dense_top`) of the user's turns, fused by the
    one RRF; each with its episode (the importance is the episode's salience).
    When the question names one speaker (`named`), anyone else's turn counts
    at `OTHER_SPEAKER` of its score."""
    ts = um.turns
    lexical = _lexical(ts, tokens(query), n) if query.strip() else []
    near, spread = ts.dense_top(qvec, n)
    text_ids = [ts.rows[p].turn_id for p, _ in lexical]
    dense_ids = [ts.rows[p].turn_id for p, _ in near]
    cos = {ts.rows[p].turn_id: c for p, c in near}
    t_rank = {i: r for r, i in enumerate(text_ids, start=1)}
    d_rank = {i: r for r, i in enumerate(dense_ids, start=1)}
    out: list[_Raw] = []
    for tid, score in fuse(text_ids, dense_ids, spread_ids=[ts.rows[p].turn_id for p in spread]):
        at = ts.position(tid)
        assert at is not None
        row = ts.rows[at]
        if named is not None and row.speaker != named:
            score *= OTHER_SPEAKER
        ep = um.episodes.holding(row.stream_id, row.seq)
        r = {
            "turn_id": tid, "stream_id": row.stream_id, "seq": row.seq,
            "event_ts": row.event_ts, "line": ts.line(at), "episode": ep, "at": at,
        }  # fmt: skip
        m = Match(tid, score, t_rank.get(tid, 0), d_rank.get(tid, 0), cos.get(tid), r)
        out.append(("turns", m, r, float(ep["salience"] or 0) if ep else 0.0))
    return out


def _lexical(ts: TurnSet, terms: list[str], n: int) -> list[tuple[int, float]]:
    """BM25 top-n, the query expanded by the first pass's best documents
    (`episodic.expansion`; their own lines, not the turns before them)."""
    if expansion.FEEDBACK_DOCS <= 0 or len(ts.bm25) < expansion.MIN_COLLECTION:
        return ts.bm25.top(terms, n)
    first = ts.bm25.top(terms, expansion.FEEDBACK_DOCS)
    if not first:
        return []
    feedback = [(tokens(ts.line(p)), s) for p, s in first]
    return ts.bm25.top(expansion.expanded(terms, feedback, ts.bm25.idf), n)


def _row_candidates(items: ItemSet, kind: str, query: str, qvec: np.ndarray, n: int) -> list[_Raw]:
    hits = items.search(query, qvec, n, _ROW[kind])
    return [(kind, h, h.row, _importance(h.row)) for h in hits if h.row is not None and _near(h)]


def _near(h: Match) -> bool:
    """Near enough in cosine, and nearer when no query word reaches the item
    (`ITEM_MEANING_FLOOR`); an item outside the cosine top-n (its cosine
    unknown) stands on its word match."""
    if h.cosine is None:
        return h.text_rank > 0
    return h.cosine >= (ITEM_COSINE_FLOOR if h.text_rank > 0 else ITEM_MEANING_FLOOR)


def stale_facts(facts: ItemSet) -> list[tuple[str, str | None]]:
    """The user's facts that are no longer true (superseded or deleted), each
    with the text of the active fact that replaced it (None: none did). A fact
    replaced from its own first moment (a person's rewording) held no value
    that changed: the turns it came from still say what is true."""
    rows = facts.rows.values()
    by_old = {
        str(r["supersedes"]): r for r in rows if r.get("supersedes") and r.get("status") == "active"
    }
    out: list[tuple[str, str | None]] = []
    for r in rows:
        if r.get("status") == "active":
            continue
        new = by_old.get(str(r["fact_id"]))
        if new is not None and new.get("valid_from") == r.get("valid_from"):
            continue  # reworded, not changed
        out.append((str(r["text"]), str(new["text"]) if new is not None else None))
    return out


def _context(ts: TurnSet, at: int) -> list[HitTurn]:
    """The returned turns of the turn hit at position `at`: itself, then its
    neighbours nearest first, within the context gap."""
    near = ts.neighbours(at, CONTEXT_TURNS)
    rows = [ts.rows[p] for p in near]
    idx = context_rows([r.seq for r in rows], [r.event_ts for r in rows], near.index(at))
    return [HitTurn.model_validate(rows[i], from_attributes=True) for i in idx]


def _score_all(
    raw: Sequence[_Raw],
    stale: StaleValues,
    at: datetime,
    w: ScoreWeights,
    passages: bool = True,
) -> list[_Cand]:
    """Every candidate on the fixed scales, in the memory's own time `at`:
    - recency from event time (turn event_ts, fact valid_from, a reflection's
      newest evidence among the candidates; none found: 0);
    - a turn that states a superseded value loses `STALE_PENALTY`;
    - a reflection never outranks its best-scored evidence among the candidates;
    - with `passages`, a turn's relevance is its `passage_relevance`."""
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
    # the turn candidates' RRF by place, for each one's passage relevance
    rrf_at = {(r["stream_id"], int(r["seq"])): h.rrf for kind, h, r, _ in raw if kind == "turns"}
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
        around = _around(rrf_at, r) if kind == "turns" and passages else None
        comp = fixed_score(h.rrf, t or at, imp, at, w, around)
        if t is None:
            comp = _without_recency(comp, w)
        if kind == "turns" and stale and stale.stated_by(str(r["line"])):
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


def hit_order(c: _Cand) -> tuple[float, int, str]:
    """Best score first; a tie goes to what is believed now (a fact), then to
    what sums it up (a reflection), then to the turn; then by id."""
    return (-c[0].score, TIE_ORDER[c[1]], c[2].item_id)


def _around(rrf_at: dict[tuple[str, int], float], r: dict[str, Any]) -> list[float]:
    """The RRF of the candidate turns within `PASSAGE_TURNS` seqs of turn `r`."""
    stream, seq = r["stream_id"], int(r["seq"])
    near = (rrf_at.get((stream, seq + d)) for d in range(-PASSAGE_TURNS, PASSAGE_TURNS + 1) if d)
    return [x for x in near if x is not None]


def _without_recency(c: Components, w: ScoreWeights) -> Components:
    return Components(
        c.relevance, 0.0, c.importance, round(c.score - w.recency_weight * c.recency, 6)
    )


def _penalised(c: Components, by: float) -> Components:
    return Components(c.relevance, c.recency, c.importance, round(c.score - by, 6))


# the newest turns a search embeds when they have no vector yet: what was
# written since the user's last consolidation is found by meaning at once,
# not only by its words; older ones wait for their consolidation
FRESH_TURNS = 32


def _query_vectors(
    rt: Runtime, query: str, bare: str, fresh: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The vectors of the query, for facts and reflections ("User has a dog"
    names whom it is about), of the query without the speakers' names
    (`without_speakers`), for turns, and of the `fresh` turn texts
    (`FRESH_TURNS`); one embed call."""
    queries = [query] if bare == query else [query, bare]
    vecs = rt.embedder.embed(queries + fresh).astype(np.float32)
    return vecs[0], vecs[len(queries) - 1], vecs[len(queries) :]


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
    with rt.working.user(user_id) as um:
        bare = without_speakers(query, um.turns.speakers)
        named = named_speaker(query, um.turns.speakers)
        about = naming_the_user(query, user_id)  # for facts and reflections: "User ..."
        fresh = um.turns.unembedded(FRESH_TURNS) if "turns" in opts.kinds else []
        texts = [um.turns.rows[p].text for p in fresh]
        qvec, tvec, fresh_vecs = _query_vectors(rt, about, bare, texts)
        if fresh:
            um.turns.attach(fresh, fresh_vecs)
        raw: list[_Raw] = []
        if "turns" in opts.kinds:
            raw += _turn_candidates(um, bare, tvec, opts.pool, named)
        for kind, items in (("facts", um.facts), ("reflections", um.reflections)):
            if kind in opts.kinds:
                raw += _row_candidates(items, kind, about, qvec, opts.pool)
        # the memory's own time: its newest event, never later than the clock
        newest = um.turns.newest
        at = min(now, newest) if newest is not None else now
        passages = len(um.turns) >= PASSAGE_MIN_TURNS
        stale = StaleValues(stale_facts(um.facts))
        cands = _score_all(raw, stale, at, opts.weights, passages)
        cands.sort(key=hit_order)
        out = _hits(um.turns, cands, opts)
    if opts.record and out:
        _record_hits(rt, user_id, out, now)
    return out


def _hits(ts: TurnSet, cands: Sequence[_Cand], opts: MemoryOptions) -> list[Hit]:
    """The best `opts.k` candidates as hits; a turn hit carries its context,
    less the turns a better hit already returned."""
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
            near = _context(ts, int(r["at"]))
            turns = [t for t in near if t.turn_id not in returned]
            if not turns:
                continue  # already returned as the context of a better hit
            if opts.max_turns is not None:
                turns = turns[: opts.max_turns - len(returned)]
            returned.update(t.turn_id for t in turns)
            episode_id = str(r["episode"]["episode_id"]) if r.get("episode") else None
            text = ts.rows[int(r["at"])].text  # also when an earlier hit returned it
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
    return out


def _record_hits(rt: Runtime, user_id: str, hits: Sequence[Hit], now: datetime) -> None:
    """Note the recalls of the facts and reflections returned, and of the
    episodes that the returned turns came from (decay reads them); the
    runtime's recall log writes them within 30 s (`rt.recalls.flush()`
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
