"""Distil the facts of one closed episode.

The model (or the offline extractor) answers `ExtractedFacts`, citing turns
by their number in the prompt; here the numbers become turn ids and the
earliest supporting turn gives the fact its `valid_from`. A fact whose
support is not a shown turn is dropped with a warning, never silently; when
the model never produced a valid answer, the offline extractor's facts are
used and `decided_by` says "offline-fallback".
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from episodic.facts.normalize import normalize
from episodic.facts.schema import ExtractedFact, ExtractedFacts
from episodic.facts.types import FactTurn, NewFact
from episodic.llm.base import LLMProvider
from episodic.llm.fallback import structured_or_offline
from episodic.models import utc
from episodic.prompts.facts import extraction_messages

log = logging.getLogger(__name__)


def extract_facts(
    provider: LLMProvider, turns: Sequence[FactTurn], *, now: datetime
) -> list[NewFact]:
    """The facts `turns` (one closed episode, in order) state; one model call at most."""
    if not turns:
        return []
    turns = list(turns)
    context = {"turns": turns, "n_turns": len(turns)}
    answer = structured_or_offline(
        provider, extraction_messages(turns, now=now), ExtractedFacts, context
    )
    if answer.error:
        log.warning("fact extraction fell back to %s: %s", answer.source, answer.error)
    return facts_of(answer.value.facts, turns, answer.source)


def facts_of(
    extracted: Sequence[ExtractedFact], turns: Sequence[FactTurn], source: str
) -> list[NewFact]:
    """The model's (or the offline extractor's) facts as `NewFact`s: turn numbers
    mapped to turn ids, unsupported and empty facts dropped with a warning, the
    same fact twice merged into one."""
    facts: list[NewFact] = []
    seen: dict[str, int] = {}
    for fact in extracted:
        text = " ".join(fact.text.split())
        support = sorted({i for i in fact.support if 1 <= i <= len(turns)})
        if not text or not support:
            log.warning(
                "dropped fact %r from %s: no supporting turn among 1..%d (cited %s)",
                fact.text,
                source,
                len(turns),
                fact.support,
            )
            continue
        cited = [turns[i - 1] for i in support]
        key = normalize(text)
        if not key:
            log.warning("dropped fact %r from %s: no words in it", fact.text, source)
            continue
        if key in seen:
            # the same fact stated twice: one fact, supported by both
            old = facts[seen[key]]
            ids = tuple(dict.fromkeys(old.support_turn_ids + tuple(t.turn_id for t in cited)))
            start = min(old.valid_from, *(utc(t.event_ts) for t in cited))
            facts[seen[key]] = NewFact(old.text, ids, start, old.decided_by)
            continue
        seen[key] = len(facts)
        facts.append(
            NewFact(
                text=text,
                support_turn_ids=tuple(dict.fromkeys(t.turn_id for t in cited)),
                valid_from=min(utc(t.event_ts) for t in cited),
                decided_by=source,
            )
        )
    return facts
