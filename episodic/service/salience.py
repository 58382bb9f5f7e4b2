"""Salience for closed episodes that have none yet: one anchored score per
episode, never per turn, written back in one batch per chunk.

The question asked is the episode digest: one call gives the score, the
summary and the candidate facts of up to `BATCH_MAX_EPISODES` episodes within
a token budget (`episodic.service.digest_batch`), each item validated and
checked per episode; the facts are held for the fact step of the same run
(`episodic.service.digests`). Nothing is written until the whole chunk is
digested: one write, so a crash mid-batch loses and doubles nothing."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from episodic.crashpoints import crashpoint
from episodic.digest import prepare
from episodic.llm.cache import per_user
from episodic.models import Episode, Turn, now_utc
from episodic.service import digests
from episodic.service.digest_batch import DigestStats, digest_all
from episodic.service.runtime import Runtime

PRIOR_CENTROIDS = 200


@dataclass
class SalienceBatch:
    scored: int = 0
    histogram: Counter[int] = field(default_factory=Counter)
    sources: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    salience_sum: float = 0.0
    calls: int = 0  # digest questions asked (batches and singles)
    batched: int = 0  # episodes answered inside a batch question
    untrusted: Counter[str] = field(default_factory=Counter)  # check -> episodes


def _turns_of(rt: Runtime, user_id: str, episodes: list[Episode]) -> dict[str, Turn]:
    ids = [tid for e in episodes for tid in e.turn_ids]
    return {t.turn_id: t for t in rt.raw.by_ids(user_id, ids)}


@per_user
def score_pending(
    rt: Runtime, user_id: str, episode_ids: list[str], now: datetime | None = None
) -> SalienceBatch:
    now = now or now_utc()
    out = SalienceBatch()
    episodes = [e for e in rt.episodes.by_ids(user_id, episode_ids) if not e.salience_source]
    if not episodes:
        return out
    episodes.sort(key=lambda e: (e.stream_id, e.first_seq))
    turns = _turns_of(rt, user_id, episodes)
    vecs = rt.vectors.get(user_id, list(turns), rt.embedder.name)
    earlier = rt.episodes.scored_centroids(user_id, PRIOR_CENTROIDS)
    prior = np.asarray(earlier, dtype=np.float32) if earlier else None
    prepared = []
    for e in episodes:
        ts = [turns[t] for t in e.turn_ids if t in turns]
        if not ts:
            continue
        mat = np.asarray([vecs[t.turn_id] for t in ts if t.turn_id in vecs], dtype=np.float32)
        prepared.append(
            prepare(
                e.episode_id,
                ts,
                vectors=mat if len(mat) == len(ts) else None,
                prior_centroids=prior,
                ended=e.ended_at,  # "today" is the episode's end, like the fact prompts
            )
        )
    stats = DigestStats()
    answers = digest_all(rt.provider, prepared, domain=rt.settings.domain, stats=stats)
    out.calls, out.batched, out.untrusted = stats.calls, stats.batched, stats.untrusted
    changes: dict[str, dict[str, object]] = {}
    for e in episodes:
        digest = answers.get(e.episode_id)
        if digest is None:
            continue
        digests.hold(user_id, e.episode_id, digest.facts)
        res = digest.salience
        rationale = res.rationale if res.error is None else f"{res.rationale} [error: {res.error}]"
        changes[e.episode_id] = {
            "salience": int(res.score),
            "salience_source": res.source,
            "salience_rationale": rationale[:1000],
            "summary": e.summary or res.summary,
        }
        out.scored += 1
        out.histogram[int(res.score)] += 1
        out.sources[res.source] += 1
        out.salience_sum += res.score
        if res.error:
            out.errors.append(res.error)
    crashpoint("before_salience_write")
    rt.episodes.update(user_id, changes)
    return out
