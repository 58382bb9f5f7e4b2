"""Importance-triggered reflection: when the salience of a user's episodes
closed since the last reflection reaches the threshold, ask focal questions,
retrieve for each, and store insights whose evidence is checked to exist and
to belong to the user. Reflections never enter raw."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from episodic.llm.cache import per_user
from episodic.llm.fallback import structured_or_offline
from episodic.models import Episode, Reflection, now_utc, stable_id
from episodic.prompts.reflection import focal_question_messages, insight_messages
from episodic.reflection import (
    FocalQuestions,
    Insights,
    ReflectionSource,
    insight_importance,
    map_evidence,
    salience_since,
    should_reflect,
    validate_evidence,
)
from episodic.reflection_repeats import without_repeats
from episodic.service.evidence import evidence_hits
from episodic.service.runtime import Runtime
from episodic.service.search import MemoryOptions
from storage.allocator import release

MAX_SOURCES = 100


@dataclass
class ReflectionRun:
    due: bool
    pending_salience: float
    written: int = 0
    questions: int = 0
    dropped_evidence: int = 0
    repeats: int = 0  # insights already held, or said twice in this run

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def since_last(rt: Runtime, user_id: str) -> tuple[list[Episode], float]:
    last = rt.reflections.last_reflected_at(user_id)
    eps = [
        e
        for e in rt.episodes.scored_since(user_id, last)
        if e.salience_source and (last is None or e.closed_at > last)
    ]
    return eps, salience_since([e.salience for e in eps])


def owners(rt: Runtime, ids: list[str]) -> dict[str, str]:
    """The user of each id as storage records it (episodes and facts), whatever
    the caller or the model believes; an id found nowhere is left out."""
    found: dict[str, str] = {}
    for table, column in (("episodes", "episode_id"), ("facts", "fact_id")):
        found.update(rt.store.owners(table, column, ids))
    return found


@per_user
def reflect_if_due(rt: Runtime, user_id: str, *, force: bool = False) -> dict[str, Any]:
    eps, total = since_last(rt, user_id)
    if not eps or not (force or should_reflect(total, rt.settings.reflection_threshold)):
        del eps
        release()  # the user's scored episodes, back to the OS
        return ReflectionRun(due=False, pending_salience=total).as_dict()
    run = reflect_user(rt, user_id, eps, total).as_dict()
    del eps
    release()
    return run


def reflect_user(
    rt: Runtime, user_id: str, eps: list[Episode], total: float, now: datetime | None = None
) -> ReflectionRun:
    now = now or now_utc()
    run = ReflectionRun(due=True, pending_salience=total)
    recent = sorted(eps, key=lambda e: e.ended_at)[-MAX_SOURCES:]
    sources = [
        ReflectionSource(e.episode_id, e.summary or e.text[:300], float(e.salience)) for e in recent
    ]
    statements = [s.text for s in sources]
    focal = structured_or_offline(
        rt.provider,
        focal_question_messages(statements, now),
        FocalQuestions,
        context={"statements": statements},
    ).value
    run.questions = len(focal.questions)
    salience_of = {e.episode_id: float(e.salience) for e in eps}
    kind_of = {e.episode_id: "episode" for e in eps}
    made: dict[str, Reflection] = {}
    # the evidence pool: the recent episodes plus what the shipped search
    # brings back (a turn hit stands for its episode); the reflection's own
    # retrieval is not a recall: it must not slow the decay. Every question
    # is searched first, the user's working set loaded once (evidence.py)
    opts = MemoryOptions(k=10, kinds=("turns", "facts"), record=False)
    found = evidence_hits(rt, user_id, list(focal.questions), opts, now)
    answered: list[tuple[Any, list[str]]] = []  # (insight, the pool ids it cites)
    for q, hits in zip(focal.questions, found, strict=True):
        pool = list(sources)
        seen = {s.item_id for s in pool}
        for h in hits:
            item, kind = (h.episode_id, "episode") if h.kind == "turn" else (h.item_id, h.kind)
            if item and item not in seen and len(pool) < MAX_SOURCES:
                importance = 10.0 * h.importance  # back on the 0-10 scale
                text = h.text if kind == "fact" else " ".join(t.text for t in h.turns)
                pool.append(ReflectionSource(item, text, importance))
                seen.add(item)
                salience_of[item] = importance
                kind_of[item] = kind
        answer = structured_or_offline(
            rt.provider,
            insight_messages(q, [p.text for p in pool], now),
            Insights,
            context={"sources": pool},
        ).value
        ids = [p.item_id for p in pool]
        answered += [(ins, map_evidence(ins.evidence, ids)) for ins in answer.insights]
    # ownership from storage, for every question's citations at once: a pool
    # polluted by a caller or a retrieval bug must not let another user's
    # item into this user's reflections
    owner_of = owners(rt, sorted({i for _, cited in answered for i in cited}))
    for ins, cited in answered:
        valid = validate_evidence(cited, user_id=user_id, owner_of=owner_of)
        run.dropped_evidence += len(ins.evidence) - len(valid)
        if not valid:
            continue
        rid = stable_id("reflection", user_id, ins.text)
        made[rid] = Reflection(
            reflection_id=rid,
            user_id=user_id,
            text=ins.text,
            evidence_episode_ids=[i for i in valid if kind_of.get(i) == "episode"],
            evidence_fact_ids=[i for i in valid if kind_of.get(i) == "fact"],
            importance=insight_importance([salience_of.get(i, 5.0) for i in valid]),
            created_at=now,
        )
    items = list(made.values())
    if items:
        vecs = rt.embedder.embed([r.text for r in items])
        items = [
            r.model_copy(update={"vector": [float(x) for x in v]})
            for r, v in zip(items, vecs, strict=True)
        ]
        held = [r.vector for r in rt.reflections.list(user_id)]
        items, run.repeats = without_repeats(items, held)
        run.written = rt.reflections.write(items)
    rt.reflections.mark_reflected(user_id, now)
    return run
