"""One model call per closed episode: salience, summary and candidate facts together.

    prepare(key, turns, ...) -> Prepared; the service asks the model
    (episodic.service.digest_batch.digest_all) -> Digest(salience, facts)

The response model `EpisodeDigest` composes the two contracts that stay
separate models: `SalienceRating` (score, rationale, summary) and a list of
`ExtractedFact` (text, support). Its validation context carries what each
part's validators and offline answer read (the turn count for the support
range, the features for the offline score, the readable summary), so one
answer is checked as the two separate answers were. When the model fails
after its retries, both parts come from the offline answer and both record
`offline-fallback` with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from episodic.facts.extract import facts_of
from episodic.facts.offline_extract import offline_extract
from episodic.facts.schema import ExtractedFact
from episodic.facts.types import FactTurn, NewFact
from episodic.models import Turn
from episodic.prompts.digest import estimate_tokens
from episodic.prompts.salience import DEFAULT_MAX_TOKENS
from episodic.salience import (
    EpisodeFeatures,
    EpisodeTurn,
    SalienceRating,
    SalienceResult,
    Vectors,
    episode_features,
    extractive_summary,
)
from episodic.summary import readable_summary

DIGEST_MAX_FACTS = 20


class EpisodeDigest(BaseModel):
    """The answer for one closed episode: its rating and its candidate facts."""

    rating: SalienceRating
    facts: list[ExtractedFact] = Field(default_factory=list, max_length=DIGEST_MAX_FACTS)

    @classmethod
    def offline_answer(cls, context: dict[str, Any]) -> EpisodeDigest:
        rating = SalienceRating.offline_answer(context)
        found = offline_extract(context.get("turns", []))[:DIGEST_MAX_FACTS]
        return cls(rating=rating, facts=[ExtractedFact(text=t, support=s) for t, s in found])


@dataclass(frozen=True)
class Digest:
    salience: SalienceResult
    facts: list[NewFact]


def offline_summary(turns: Sequence[EpisodeTurn], vectors: Vectors | None = None) -> str:
    """The readable summary, or the most central turn when no one spoke."""
    return readable_summary(turns) or extractive_summary(
        [t.text for t in turns], vectors, roles=[t.role for t in turns]
    )


@dataclass
class Prepared:
    """One episode ready to be asked about: its views and its validation context."""

    key: str
    turns: list[FactTurn]
    kinds: list[str]
    ended: datetime
    features: EpisodeFeatures
    summary: str
    context: dict[str, Any]
    tokens: int

    @property
    def text(self) -> str:
        return "\n".join(t.text for t in self.turns)


def prepare(
    key: str,
    turns: Sequence[Turn],
    *,
    vectors: Vectors | None,
    prior_centroids: Vectors | Sequence[Sequence[float]] | None,
    ended: datetime,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> Prepared:
    if not turns:
        raise ValueError("cannot digest an empty episode")
    view = [EpisodeTurn.of(t) for t in turns]
    fact_turns = [FactTurn(t.turn_id, t.role, t.text, t.event_ts) for t in turns]
    features = episode_features(view, vectors, prior_centroids)
    summary = offline_summary(view, vectors)
    context = {
        "features": features.as_dict(),
        "summary": summary,
        "turns": fact_turns,
        "n_turns": len(fact_turns),
    }
    return Prepared(
        key, fact_turns, [t.kind for t in turns], ended, features, summary, context,
        estimate_tokens(fact_turns, max_tokens),
    )  # fmt: skip


def digest_of(
    p: Prepared,
    rating: SalienceRating,
    source: str,
    error: str | None,
    facts: Sequence[ExtractedFact],
    facts_source: str,
) -> Digest:
    """The digest of a rating (from `source`) and facts (from `facts_source`)."""
    salience = SalienceResult.of(rating, source, error, p.features, p.summary)
    return Digest(salience, facts_of(facts, p.turns, facts_source))
