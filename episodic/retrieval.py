"""Retrieval scoring: alpha * recency + beta * importance + gamma * similarity.

Each component is min-max normalised over the candidates of one query, as in
Generative Agents. Unlike the Generative Agents code, recency decays with the
wall-clock hours since an item was last accessed, not with its rank position,
and the most recently accessed item gets the highest recency.

Pure functions over plain values: the candidates come from storage (vector and
full-text search), the ranking comes back to the caller, which records the
recall of every returned item.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from episodic.models import utc

ItemKind = Literal["episode", "fact", "reflection"]
ITEM_KINDS: tuple[str, ...] = ("episode", "fact", "reflection")


class Weights(BaseModel):
    """The three weights of the retrieval score; non-negative, not all zero."""

    model_config = ConfigDict(frozen=True)

    alpha: float = Field(default=1.0, ge=0.0, le=100.0, allow_inf_nan=False)
    beta: float = Field(default=1.0, ge=0.0, le=100.0, allow_inf_nan=False)
    gamma: float = Field(default=1.0, ge=0.0, le=100.0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _not_all_zero(self) -> Weights:
        if self.alpha == 0.0 and self.beta == 0.0 and self.gamma == 0.0:
            raise ValueError("at least one of alpha, beta, gamma must be positive")
        return self


@dataclass(frozen=True, slots=True)
class Candidate:
    """One item a search returned, before ranking.

    `importance` is on the item's own scale (effective salience 0-10 for
    episodes, importance for facts and reflections); `similarity` is the
    query similarity (cosine, or a full-text score mapped by the caller).
    `last_access` is when the item was last recalled, or written if never.
    """

    item_id: str
    kind: ItemKind
    text: str
    importance: float
    similarity: float
    last_access: datetime
    recall_count: int = 0

    def __post_init__(self) -> None:
        if not self.item_id:
            raise ValueError("item_id is empty")
        if self.kind not in ITEM_KINDS:
            raise ValueError(f"unknown item kind {self.kind!r}")
        for name in ("importance", "similarity"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} of {self.item_id} is not finite")
        if self.recall_count < 0:
            raise ValueError(f"recall_count of {self.item_id} is negative")


@dataclass(frozen=True, slots=True)
class ScoredItem:
    """A ranked item with every component of its score, so a user sees why."""

    item_id: str
    kind: ItemKind
    text: str
    score: float
    # normalised components in [0, 1], before weighting
    recency: float
    importance: float
    similarity: float
    # raw values the components were normalised from
    raw_recency: float
    raw_importance: float
    raw_similarity: float
    hours_since_access: float
    recall_count: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def recency(last_access: datetime, now: datetime, half_life_hours: float) -> float:
    """Exponential decay in wall-clock hours since the last access.

    recency = 0.5 ** (dt_hours / half_life_hours): 1.0 when just accessed,
    0.5 after one half-life, strictly decreasing in dt. An access in the
    future (clock skew between writers) counts as just now.
    """
    if not (half_life_hours > 0.0 and math.isfinite(half_life_hours)):
        raise ValueError(f"half_life_hours must be positive, got {half_life_hours}")
    return float(0.5 ** (hours_between(last_access, now) / half_life_hours))


def hours_between(earlier: datetime, later: datetime) -> float:
    """Hours from `earlier` to `later`, never negative; naive values are UTC."""
    return max(0.0, (utc(later) - utc(earlier)).total_seconds() / 3600.0)


def min_max(values: Sequence[float]) -> list[float]:
    """Scale values to [0, 1] by (v - min) / (max - min).

    When every value is equal (including a single candidate) there is no spread
    to rank by, and each value maps to 1.0: the component neither helps nor
    hurts any candidate against another, and a lone result shows as fully
    recent / important / similar rather than as zero. No division by zero and
    no NaN: a non-finite input raises ValueError.
    """
    if not values:
        return []
    if not all(math.isfinite(v) for v in values):
        raise ValueError("min_max needs finite values")
    lo = min(values)
    hi = max(values)
    span = hi - lo
    if not math.isfinite(span):  # e.g. -1e308 and 1e308: halve and try again
        return min_max([v / 2.0 for v in values])
    if span <= 0.0:
        return [1.0] * len(values)
    return [(v - lo) / span for v in values]


def rank(
    candidates: Sequence[Candidate],
    *,
    now: datetime,
    weights: Weights,
    half_life_hours: float = 24.0,
    k: int,
) -> list[ScoredItem]:
    """Score candidates and return the top k, best first.

    score = alpha * norm(recency) + beta * norm(importance)
    + gamma * norm(similarity), each component min-max normalised over these
    candidates. Ties break by item_id, so the order is deterministic.
    Duplicate item_ids are refused: the caller merges vector and full-text
    hits before ranking.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    seen: set[str] = set()
    for c in candidates:
        if c.item_id in seen:
            raise ValueError(f"duplicate candidate {c.item_id}")
        seen.add(c.item_id)
    if not candidates:
        return []

    hours = [hours_between(c.last_access, now) for c in candidates]
    raw_rec = [recency(c.last_access, now, half_life_hours) for c in candidates]
    raw_imp = [c.importance for c in candidates]
    raw_sim = [c.similarity for c in candidates]
    n_rec, n_imp, n_sim = min_max(raw_rec), min_max(raw_imp), min_max(raw_sim)

    scored = [
        ScoredItem(
            item_id=c.item_id,
            kind=c.kind,
            text=c.text,
            score=weights.alpha * n_rec[i] + weights.beta * n_imp[i] + weights.gamma * n_sim[i],
            recency=n_rec[i],
            importance=n_imp[i],
            similarity=n_sim[i],
            raw_recency=raw_rec[i],
            raw_importance=raw_imp[i],
            raw_similarity=raw_sim[i],
            hours_since_access=hours[i],
            recall_count=c.recall_count,
        )
        for i, c in enumerate(candidates)
    ]
    scored.sort(key=lambda s: (-s.score, s.item_id))
    return scored[:k]


def rrf_scores(
    rankings: Sequence[Sequence[str]],
    k: int = 60,
    weights: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion: sum over rankings of w / (k + rank), rank from 1.

    `weights` (one per ranking, default 1.0 each) must be non-negative.
    An id repeated inside one ranking counts at its best position only.
    Returned best first; ties break by id.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    ws = [1.0] * len(rankings) if weights is None else [float(w) for w in weights]
    if len(ws) != len(rankings) or any(not (w >= 0.0 and math.isfinite(w)) for w in ws):
        raise ValueError("need one finite, non-negative weight per ranking")
    total: dict[str, float] = {}
    for w, ranking in zip(ws, rankings, strict=True):
        seen: set[str] = set()
        for position, item_id in enumerate(ranking, start=1):
            if item_id in seen:
                continue
            seen.add(item_id)
            total[item_id] = total.get(item_id, 0.0) + w / (k + position)
    return sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))


def rrf_fuse(rankings: Sequence[Sequence[str]], k: int = 60) -> list[str]:
    """Ids fused by reciprocal rank (see `rrf_scores`), best first."""
    return [item_id for item_id, _ in rrf_scores(rankings, k)]


# --- the shipped design (docs/retrieval.md; chosen on LoCoMo dev5, in-sample) -----

RRF_K = 60
W_TEXT = 1.0  # BM25 over turn documents
W_DENSE = 0.5  # cosine over turn vectors: at 1.0 it cost 3-4 points on dev5
CONTEXT_TURNS = 1  # a turn hit returns itself and one neighbour on each side ...
CONTEXT_GAP_MINUTES = 30.0  # ... never across a gap this long (the detector's time-gap cut)
IMAGE = " [image: {}]"


def turn_line(speaker: str, text: str, caption: str | None = None) -> str:
    """One turn as BM25 sees it: `speaker: text [image: caption]`."""
    line = f"{speaker}: {text}"
    return line + IMAGE.format(caption) if caption else line


def turn_doc(line: str, previous: str | None) -> str:
    """The search document of a turn: the turn before it (same stream, within the
    context gap) and the turn itself. An answer is found by the words of the
    question that drew it (+4 points of evidence recall on dev5)."""
    return f"{previous}\n{line}" if previous else line


def relevance(
    rrf: float, *, w_text: float = W_TEXT, w_dense: float = W_DENSE, k: int = RRF_K
) -> float:
    """RRF on a fixed [0, 1] scale: divided by its largest possible value (first
    in both rankings), never by the best score among the candidates."""
    top = (w_text + w_dense) / (k + 1)
    return min(1.0, max(0.0, rrf / top)) if top > 0 else 0.0


class ScoreWeights(BaseModel):
    """score = relevance + recency_weight * recency + importance_weight * importance,
    every component in [0, 1] on a fixed scale. The defaults keep relevance first:
    recency and importance only reorder hits of about equal relevance (dev5:
    weights of 0.1 change evidence recall by less than 0.005)."""

    model_config = ConfigDict(frozen=True)

    recency_weight: float = Field(default=0.1, ge=0.0, le=10.0, allow_inf_nan=False)
    importance_weight: float = Field(default=0.1, ge=0.0, le=10.0, allow_inf_nan=False)
    half_life_hours: float = Field(default=24.0, gt=0.0, allow_inf_nan=False)


@dataclass(frozen=True, slots=True)
class Components:
    relevance: float
    recency: float
    importance: float
    score: float


def fixed_score(
    rrf: float, last_access: datetime, importance_0_10: float, now: datetime, w: ScoreWeights
) -> Components:
    """The fixed-scale score of one hit; importance is on the 0-10 salience scale."""
    rel = relevance(rrf)
    rec = recency(last_access, now, w.half_life_hours)
    imp = min(1.0, max(0.0, float(importance_0_10) / 10.0))
    score = rel + w.recency_weight * rec + w.importance_weight * imp
    return Components(round(rel, 6), round(rec, 6), round(imp, 6), round(score, 6))


def context_rows(
    seqs: Sequence[int],
    times: Sequence[datetime],
    hit: int,
    n: int = CONTEXT_TURNS,
    gap_minutes: float = CONTEXT_GAP_MINUTES,
) -> list[int]:
    """Indices into `seqs` (one stream, ascending) returned for the hit at index
    `hit`: the hit first, then neighbours nearest first, stopping at a time gap
    longer than `gap_minutes` or a hole in the seqs."""
    out = [hit]
    for step in (-1, 1):
        j = hit
        for _ in range(n):
            nxt = j + step
            if not 0 <= nxt < len(seqs) or abs(seqs[nxt] - seqs[j]) != 1:
                break
            if (
                hours_between(min(times[j], times[nxt]), max(times[j], times[nxt])) * 60
                > gap_minutes
            ):
                break
            out.append(nxt)
            j = nxt
    return sorted(out, key=lambda i: (abs(i - hit), i))
