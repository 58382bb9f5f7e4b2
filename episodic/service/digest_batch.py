"""Several closed episodes of one user digested in one call.

The salience step used to ask one `EpisodeDigest` per episode. Here episodes
are grouped, in event order, into batches bounded by
`prompts.digest.BATCH_MAX_EPISODES` and `BATCH_INPUT_TOKENS` (the budget and
why it is that size are explained there), and one `BatchDigest` question asks
for every episode's rating, summary and candidate facts. Each item of the
answer is then validated on its own against that episode's context (the turn
numbers it may cite), exactly as a one-episode answer is, and checked before
it is trusted (`episodic.llm.trust`); an item that fails either falls back to
the offline answer for that episode alone.

What does not change:
- a batch of one asks the one-episode question (same messages, same context,
  so the same cache key as before);
- the offline answer of a batch is, item by item, the offline answer of each
  episode, so the end state on the offline provider is the same batched or
  not (tests/unit/test_salience_batch.py);
- nothing is written here: the salience step writes all its episodes in one
  update after the whole chunk, so a crash mid-batch loses nothing and
  doubles nothing, and the rerun asks the very same questions (cache hits);
- a batch whose answer never fits the schema is asked again one episode at a
  time (a model that cannot do the batch still gets its chance per episode);
  a transient failure (timeout, 5xx) falls back offline for its episodes with
  the reason, as a failed one-episode call does.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from episodic.digest import DIGEST_MAX_FACTS, Digest, EpisodeDigest, Prepared, digest_of
from episodic.errors import LLMError, LLMSchemaError
from episodic.facts.schema import ExtractedFact
from episodic.llm import trust
from episodic.llm.accounting import record_fallback, record_untrusted, record_wait
from episodic.llm.base import LLMProvider, Usage
from episodic.llm.fallback import OFFLINE, OFFLINE_FALLBACK, structured_or_offline
from episodic.llm.validate import coerce
from episodic.prompts.digest import (
    BATCH_INPUT_TOKENS,
    BATCH_MAX_EPISODES,
    digest_batch_messages,
    digest_messages,
    instruction_texts,
)
from episodic.prompts.salience import DEFAULT_MAX_TOKENS, Domain
from episodic.salience import SalienceRating


class BatchItem(BaseModel):
    episode: int = Field(ge=1, description="The episode's number as shown.")
    rating: SalienceRating
    facts: list[ExtractedFact] = Field(default_factory=list, max_length=DIGEST_MAX_FACTS)


class BatchDigest(BaseModel):
    """One item per episode shown, each validated again against its episode."""

    episodes: list[BatchItem] = Field(default_factory=list)

    @classmethod
    def offline_answer(cls, context: dict[str, Any]) -> BatchDigest:
        items = []
        for n, ctx in enumerate(context.get("episodes", []), start=1):
            one = EpisodeDigest.offline_answer(ctx)
            items.append(BatchItem(episode=n, rating=one.rating, facts=one.facts))
        return cls(episodes=items)


@dataclass
class DigestStats:
    calls: int = 0  # questions asked (batches and singles), cache hits included
    batched: int = 0  # episodes answered by a batch question
    untrusted: Counter[str] = field(default_factory=Counter)  # check -> episodes


def batches(
    items: Sequence[Prepared],
    *,
    max_episodes: int = BATCH_MAX_EPISODES,
    max_tokens: int | None = None,
) -> list[list[Prepared]]:
    """Consecutive groups, in the given order, within both bounds (an episode
    over the token budget alone makes a group of one)."""
    budget = max_tokens if max_tokens is not None else BATCH_INPUT_TOKENS
    out: list[list[Prepared]] = []
    cur: list[Prepared] = []
    used = 0
    for p in items:
        if cur and (len(cur) >= max_episodes or used + p.tokens > budget):
            out.append(cur)
            cur, used = [], 0
        cur.append(p)
        used += p.tokens
    if cur:
        out.append(cur)
    return out


def digest_all(
    provider: LLMProvider,
    items: Sequence[Prepared],
    *,
    domain: Domain = "general",
    max_tokens: int = DEFAULT_MAX_TOKENS,
    max_episodes: int | None = None,
    stats: DigestStats | None = None,
) -> dict[str, Digest]:
    """Every episode's digest, by key; one call per batch at most."""
    stats = stats if stats is not None else DigestStats()
    out: dict[str, Digest] = {}
    limit = max_episodes if max_episodes is not None else BATCH_MAX_EPISODES
    for group in batches(items, max_episodes=limit):
        if len(group) == 1:
            out[group[0].key] = _single(provider, group[0], domain, max_tokens, stats)
        else:
            out.update(_batch(provider, group, domain, max_tokens, stats))
    return out


def _single(
    provider: LLMProvider, p: Prepared, domain: Domain, max_tokens: int, stats: DigestStats
) -> Digest:
    """The one-episode question, as `episodic.digest.digest_episode` asks it."""
    messages = digest_messages(p.turns, p.kinds, domain=domain, now=p.ended, max_tokens=max_tokens)
    stats.calls += 1
    answer = structured_or_offline(provider, messages, EpisodeDigest, p.context)
    return _checked(
        p, answer.value, answer.source, answer.error, stats, flat=False, provider=provider
    )


def _batch(
    provider: LLMProvider,
    group: list[Prepared],
    domain: Domain,
    max_tokens: int,
    stats: DigestStats,
) -> dict[str, Digest]:
    messages = digest_batch_messages(
        [(p.turns, p.kinds, p.ended) for p in group],
        domain=domain,
        now=group[-1].ended,
        max_tokens=max_tokens,
    )
    context = {"episodes": [p.context for p in group]}
    stats.calls += 1
    t0 = time.perf_counter()
    try:
        value = provider.structured(messages, BatchDigest, context=context)
    except LLMSchemaError:
        # the model cannot answer the batch's shape: each episode on its own
        return {p.key: _single(provider, p, domain, max_tokens, stats) for p in group}
    except LLMError as exc:
        if provider.name == OFFLINE:
            raise
        _fell_back(provider, len(group))
        return {p.key: _offline(p, OFFLINE_FALLBACK, str(exc)) for p in group}
    finally:
        usage = getattr(provider, "usage", None)
        if isinstance(usage, Usage):
            record_wait(usage, time.perf_counter() - t0, "digest")
    stats.batched += len(group)
    source = OFFLINE if provider.name == OFFLINE else provider.model
    by_n: dict[int, BatchItem] = {}
    for answered in value.episodes:
        by_n.setdefault(answered.episode, answered)
    scores = [int(i.rating.score) for i in by_n.values()]
    flat = source != OFFLINE and len(by_n) == len(group) and trust.flat_scores(scores)
    out: dict[str, Digest] = {}
    for n, p in enumerate(group, start=1):
        item: BatchItem | None = by_n.get(n)
        if item is None:
            _fell_back(provider, 1, "missing-item")
            stats.untrusted["missing-item"] += 1
            out[p.key] = _offline(p, OFFLINE_FALLBACK, f"batch answer had no episode {n}")
            continue
        try:
            one = coerce({"rating": item.rating, "facts": item.facts}, EpisodeDigest, p.context)
        except (ValidationError, TypeError) as exc:
            _fell_back(provider, 1, "invalid-item")
            stats.untrusted["invalid-item"] += 1
            out[p.key] = _offline(p, OFFLINE_FALLBACK, f"episode {n}: {exc}"[:500])
            continue
        out[p.key] = _checked(p, one, source, None, stats, flat=flat, provider=provider)
    return out


def _fell_back(provider: LLMProvider, n: int, check: str | None = None) -> None:
    usage = getattr(provider, "usage", None)
    if isinstance(usage, Usage):
        for _ in range(n):
            record_fallback(usage, "digest")
            if check:
                record_untrusted(usage, "digest", check)


def _offline(p: Prepared, source: str, error: str | None) -> Digest:
    value = EpisodeDigest.offline_answer(p.context)
    return digest_of(p, value.rating, source, error, value.facts, source)


def _checked(
    p: Prepared,
    value: EpisodeDigest,
    source: str,
    error: str | None,
    stats: DigestStats,
    *,
    flat: bool,
    provider: LLMProvider,
) -> Digest:
    """A model's answer for one episode, its untrusted parts answered offline."""
    if source in (OFFLINE, OFFLINE_FALLBACK):
        return digest_of(p, value.rating, source, error, value.facts, source)
    instructions = instruction_texts()
    text = p.text
    offline = EpisodeDigest.offline_answer(p.context)
    rating, r_source, r_error = value.rating, source, error
    problem = None
    if flat:
        problem = trust.FLAT
    elif trust.echoes_prompt(rating.summary, instructions, text) or trust.echoes_prompt(
        rating.rationale, instructions, text
    ):
        problem = trust.ECHO
    if problem:
        _fell_back(provider, 1, f"salience:{problem}")
        stats.untrusted[f"salience:{problem}"] += 1
        rating, r_source, r_error = offline.rating, OFFLINE_FALLBACK, f"untrusted: {problem}"
    facts, f_source = list(value.facts), source
    bad = None
    for f in facts:
        if trust.echoes_prompt(f.text, instructions, text):
            bad = trust.ECHO
            break
        if trust.unsupported_fact(f.text, text):
            bad = trust.UNSUPPORTED
            break
    if bad:
        _fell_back(provider, 1, f"facts:{bad}")
        stats.untrusted[f"facts:{bad}"] += 1
        facts, f_source = list(offline.facts), OFFLINE_FALLBACK
    return digest_of(p, rating, r_source, r_error, facts, f_source)
