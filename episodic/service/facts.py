"""Fact distillation and merge for closed episodes, one user at a time.

Candidate facts come from the episode digest the salience step already asked
for (`episodic.service.digests`); only an episode not digested in this process is
extracted here, with its own call.

Per episode: extract, find candidates, decide, then persist the decisions as
a plan on the episode row before applying them. A crash after the plan is
saved replays the same plan (its writes are idempotent); a crash before it
decides again from an unchanged store."""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from episodic.crashpoints import crashpoint
from episodic.facts import CandidateSet, ExistingFact, FactTurn, decide, extract_facts
from episodic.llm.cache import per_user
from episodic.models import Episode, Turn, now_utc
from episodic.service import digests
from episodic.service.fact_mirror import ActiveFacts
from episodic.service.runtime import Runtime
from episodic.vocab import FactsState
from storage.allocator import release
from storage.facts import PlannedFact, new_fact_id

log = logging.getLogger(__name__)

FACT_WINDOW = 200  # episodes planned in memory, then persisted and applied in one write each


@dataclass
class FactBatch:
    episodes: int = 0
    events: Counter[str] = field(default_factory=Counter)
    decided_by: Counter[str] = field(default_factory=Counter)


def extract_episode(
    rt: Runtime, e: Episode, known: dict[str, Turn] | None = None
) -> tuple[list[Any], np.ndarray]:
    """The episode's new facts and their vectors (the part that needs no store)."""
    new_facts = digests.take(e.user_id, e.episode_id)
    if new_facts is None:
        new_facts = extract_facts(rt.provider, _views(rt, e, known), now=e.ended_at)
    if not new_facts:
        return [], np.zeros((0, rt.embedder.dim), dtype=np.float32)
    return new_facts, rt.embedder.embed([f.text for f in new_facts])


def _views(rt: Runtime, e: Episode, known: dict[str, Turn] | None) -> list[FactTurn]:
    if known is not None and all(t in known for t in e.turn_ids):
        turns = sorted((known[t] for t in e.turn_ids), key=lambda t: (t.stream_id, t.seq))
    else:
        turns = rt.raw.by_ids(e.user_id, e.turn_ids)
    return [
        FactTurn(turn_id=t.turn_id, role=t.role, text=t.text, event_ts=t.event_ts) for t in turns
    ]


def extract_window(
    rt: Runtime, episodes: list[Episode], known: dict[str, Turn]
) -> dict[str, tuple[list[Any], np.ndarray]]:
    """Extract every episode's facts, then embed them all in one batch: one
    model call per window instead of one per episode."""
    facts: dict[str, list[Any]] = {}
    for e in episodes:
        held = digests.take(e.user_id, e.episode_id)
        facts[e.episode_id] = (
            held
            if held is not None
            else extract_facts(rt.provider, _views(rt, e, known), now=e.ended_at)
        )
    texts = [f.text for fs in facts.values() for f in fs]
    vecs = rt.embedder.embed(texts) if texts else np.zeros((0, rt.embedder.dim), np.float32)
    out: dict[str, tuple[list[Any], np.ndarray]] = {}
    pos = 0
    for eid, fs in facts.items():
        out[eid] = (fs, vecs[pos : pos + len(fs)])
        pos += len(fs)
    return out


def plan_episode(
    rt: Runtime,
    e: Episode,
    known: dict[str, Turn] | None = None,
    mirror: ActiveFacts | None = None,
    extracted: tuple[list[Any], np.ndarray] | None = None,
) -> list[PlannedFact]:
    new_facts, vecs = extracted if extracted is not None else extract_episode(rt, e, known)
    if not new_facts:
        return []
    sets = []
    for f, v in zip(new_facts, vecs, strict=True):
        if mirror is not None:
            cands = mirror.candidates(f.text, v, k=5)
        else:
            found = rt.facts.candidates(e.user_id, f.text, v, k=5)
            cands = [
                ExistingFact(
                    fact_id=c.fact_id,
                    text=c.text,
                    vector=np.asarray(c.vector, dtype=np.float32) if c.vector else None,
                )
                for c, _ in found
            ]
        sets.append(CandidateSet(new=f, new_vector=v, candidates=cands))
    # "today" in a prompt is the episode's end: a backfilled transcript is read
    # as of its own time, and a rerun asks the very same question (cache hit)
    decisions = decide(rt.provider, sets, now=e.ended_at)
    plan: list[PlannedFact] = []
    for i, (d, v) in enumerate(zip(decisions, vecs, strict=True)):
        target = d.target_fact_id
        if target is None and d.target_index is not None:
            target = new_fact_id(e.user_id, e.episode_id, d.target_index)
        plan.append(
            PlannedFact(
                index=i,
                event=d.event,
                target_fact_id=target,
                old_text=d.old_text,
                new_text=d.new_text,
                valid_from=d.new_fact.valid_from,
                decided_by=d.decided_by,
                vector=[float(x) for x in v],
                importance=float(e.salience or 5),
            )
        )
    return plan


def merge_episode(
    rt: Runtime,
    e: Episode,
    now: datetime,
    done: dict[str, str] | None = None,
    known: dict[str, Turn] | None = None,
) -> Counter[str]:
    """Plan (or replay the saved plan), persist, apply, mark done.

    With `done` given, the done mark is deferred into it (episode id -> plan
    JSON) and written with the next plan or by `flush_done`: one episode write
    per episode that has facts instead of two per episode. Deferring is safe
    because applying a saved plan is idempotent: a crash before the mark lands
    replays the plan. An empty plan is not persisted at all: there is nothing
    to apply, and a crash simply plans that episode again."""
    if e.facts_state == FactsState.PLANNED and e.fact_plan:
        plan_json = e.fact_plan
        plan = [PlannedFact.from_json(d) for d in json.loads(plan_json)]
    else:
        plan = plan_episode(rt, e, known)
        plan_json = json.dumps([p.as_json() for p in plan])
        if plan:
            changes = _done_changes(done)
            changes[e.episode_id] = {"facts_state": FactsState.PLANNED, "fact_plan": plan_json}
            rt.episodes.update(e.user_id, changes)
            if done:
                done.clear()
        crashpoint("after_fact_plan")
    if plan:
        rt.facts.apply(e.user_id, e.episode_id, plan, now)
    crashpoint("after_fact_apply")
    if done is None:
        rt.episodes.update(
            e.user_id, {e.episode_id: {"facts_state": FactsState.DONE, "fact_plan": plan_json}}
        )
    else:
        done[e.episode_id] = plan_json
    return _counts(plan)


def _done_changes(done: dict[str, str] | None) -> dict[str, dict[str, object]]:
    return {
        eid: {"facts_state": FactsState.DONE, "fact_plan": pj} for eid, pj in (done or {}).items()
    }


def flush_done(rt: Runtime, user_id: str, done: dict[str, str]) -> None:
    if done:
        rt.episodes.update(user_id, _done_changes(done))
        done.clear()


@per_user
def merge_pending(rt: Runtime, user_id: str, now: datetime | None = None) -> FactBatch:
    """Merge every closed episode of the user whose facts are not done, in
    event order. Serialised per user: two merges never race on candidates."""
    now = now or now_utc()
    out = FactBatch()
    # the thread lock serialises this process; the facts lease serialises
    # processes (a second merge then finds the episodes already done)
    with rt.facts_held(user_id):
        # the ids in event order, then each window's rows: a whole history
        # of rows (centroids, texts, plans) held through the merge grew with it
        pending = rt.episodes.facts_pending_ids(user_id)
        done: dict[str, str] = {}
        try:
            for i in range(0, len(pending), FACT_WINDOW):
                window = rt.episodes.in_order(user_id, pending[i : i + FACT_WINDOW])
                _merge_window(rt, user_id, window, now, done, out)
                del window
                release()  # the window's turns and facts, freed, back to the OS
        finally:
            # episodes finished before an error are really done: keep that
            flush_done(rt, user_id, done)
    return out


def _merge_window(
    rt: Runtime,
    user_id: str,
    window: list[Episode],
    now: datetime,
    done: dict[str, str],
    out: FactBatch,
) -> None:
    """Plan each episode in order against an in-memory view of the active facts
    (which already holds the window's earlier plans), then persist every plan
    in one write and apply them all in one write per table. Same decisions as
    one episode at a time; a crash before the plan write decides again from an
    unchanged store, after it replays the saved plans."""
    fresh = [e for e in window if not (e.facts_state == FactsState.PLANNED and e.fact_plan)]
    # one read per window, of the turns of episodes this process did not digest
    digested = digests.held(user_id, [e.episode_id for e in fresh])
    ids = [t for e in fresh if e.episode_id not in digested for t in e.turn_ids]
    known = {t.turn_id: t for t in rt.raw.by_ids(user_id, ids)} if ids else {}
    extracted = extract_window(rt, fresh, known)
    mirror: ActiveFacts | None = None
    queued: list[tuple[Episode, list[PlannedFact], str]] = []
    for e in window:
        if e.facts_state == FactsState.PLANNED and e.fact_plan:
            # a crash left this plan saved: land what is queued, replay it alone
            _commit(rt, user_id, queued, now, done)
            queued = []
            counts = merge_episode(rt, e, now, done)
            mirror = None  # the store moved: read it again
        else:
            if mirror is None:
                mirror = ActiveFacts(rt.facts, user_id)
            plan = plan_episode(rt, e, known, mirror, extracted[e.episode_id])
            mirror.apply(e.episode_id, plan)
            queued.append((e, plan, json.dumps([p.as_json() for p in plan])))
            counts = _counts(plan)
        out.episodes += 1
        for k, n in counts.items():
            if k.startswith("by:"):
                out.decided_by[k[3:]] += n
            else:
                out.events[k] += n
    _commit(rt, user_id, queued, now, done)


def _commit(
    rt: Runtime,
    user_id: str,
    queued: list[tuple[Episode, list[PlannedFact], str]],
    now: datetime,
    done: dict[str, str],
) -> None:
    """Plans first (with the done marks owed so far), then the facts.

    The crash points fire once per episode, as they did when each episode was
    written alone: the nth is the state in which the nth plan is saved (or
    applied), together with the rest of its window."""
    with_facts = [(e, plan, pj) for e, plan, pj in queued if plan]
    if with_facts:
        changes = _done_changes(done)
        for e, _, pj in with_facts:
            changes[e.episode_id] = {"facts_state": FactsState.PLANNED, "fact_plan": pj}
        rt.episodes.update(user_id, changes)
        done.clear()
    for _ in queued:
        crashpoint("after_fact_plan")
    if with_facts:
        rt.facts.apply_many(user_id, [(e.episode_id, plan) for e, plan, _ in with_facts], now)
    for _ in queued:
        crashpoint("after_fact_apply")
    for e, _, pj in queued:
        done[e.episode_id] = pj


def _counts(plan: list[PlannedFact]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for p in plan:
        counts[p.event] += 1
        counts[f"by:{p.decided_by}"] += 1
    return counts
