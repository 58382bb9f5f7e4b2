"""Write-time salience of an episode: anchored LLM rating or an offline score.

One score per closed episode, never per turn. With a language model the
anchored 1-10 poignancy prompt (`episodic.prompts.salience`) is answered as a
`SalienceRating`; offline, or when the model keeps failing, the score is a
deterministic function of the episode's features (`offline_salience`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, field_validator

from episodic.llm.fallback import OFFLINE, OFFLINE_FALLBACK
from episodic.models import ROLES, TURN_KINDS
from episodic.prompts import one_line

Score = Literal[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
SUMMARY_CHARS = 160
Vectors = npt.NDArray[np.floating[Any]]


@dataclass(frozen=True, slots=True)
class EpisodeTurn:
    """The part of a turn that salience looks at, independent of storage."""

    role: str
    kind: str
    text: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"unknown role {self.role!r}")
        if self.kind not in TURN_KINDS:
            raise ValueError(f"unknown turn kind {self.kind!r}")

    @classmethod
    def of(cls, turn: Any) -> EpisodeTurn:
        """From anything with role, kind and text (a `Turn`, a row)."""
        return cls(role=str(turn.role), kind=str(turn.kind), text=str(turn.text))


# --- features ---------------------------------------------------------------

_DECISION = re.compile(
    r"\b(let'?s|let us|we'?ll go with|we will go with|going with|decided|decide to|"
    r"chose|choose to|settled on|we'?ll use|we will use|the plan is|agreed)\b",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"^\s*(no\b[,.!]?|nope\b|actually\b|not quite\b|wrong\b|incorrect\b|i meant\b)"
    r"|\b(that'?s (not right|wrong|incorrect)|you'?re wrong|not what i (asked|meant))\b",
    re.IGNORECASE,
)
_TOOL_FAILURE = re.compile(
    r"\b(traceback|exception|error|failed|failure|fatal|panic)\b", re.IGNORECASE
)
_FIRST_PERSON = re.compile(
    r"\b(i am|i'm|i was|i have|i've|i had|my|i work|i live|i like|i love|i hate|"
    r"i prefer|i use|i need|i want|i got|i moved|i started)\b",
    re.IGNORECASE,
)
# incidents in engineering work, life events in personal conversation
_SIGNIFICANT = re.compile(
    r"\b(production|outage|incident|root[- ]cause|data loss|security|vulnerab\w*|"
    r"breach|critical|urgent|deadline|rollback|postmortem|married|wedding|divorc\w*|"
    r"broke up|break[- ]up|pregnan\w*|baby|born|died|passed away|funeral|diagnos\w*|"
    r"hospital|accepted|graduat\w*|promot\w*|fired|laid off|new job|engaged|adopt\w*)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class EpisodeFeatures:
    """Counts that make an episode matter, plus its novelty for this user.

    novelty = 1 - max cosine between the episode centroid and the user's
    earlier episode centroids; 1.0 for a user's first episode; None when the
    episode has no vectors or no earlier centroids were given.
    """

    n_turns: int = 0
    n_chars: int = 0
    tool_errors: int = 0
    corrections: int = 0
    decisions: int = 0
    first_person_facts: int = 0
    questions: int = 0
    significant: int = 0
    novelty: float | None = None

    def __post_init__(self) -> None:
        for name in _COUNTS:
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.novelty is not None and not (0.0 <= self.novelty <= 1.0):
            raise ValueError(f"novelty must be in [0, 1], got {self.novelty}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> EpisodeFeatures:
        return cls(**{k: v for k, v in data.items() if k in _NAMES})


# read once: `fields()` on every episode's features was 2% of a consolidation
_NAMES = frozenset(f.name for f in fields(EpisodeFeatures))
_COUNTS = tuple(f.name for f in fields(EpisodeFeatures) if f.name != "novelty")


def _unit_rows(x: Vectors) -> Vectors:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.asarray(x / np.where(norms > 0, norms, 1.0), dtype=np.float64)


def novelty(vectors: Vectors, prior_centroids: Vectors | Sequence[Sequence[float]]) -> float:
    """1 - max cosine of the episode centroid to the earlier centroids, in [0, 1]."""
    v = np.asarray(vectors, dtype=np.float64)
    centroid = v if v.ndim == 1 else v.mean(axis=0)
    priors = np.asarray(prior_centroids, dtype=np.float64)
    if priors.size == 0:
        return 1.0
    priors = priors.reshape(-1, centroid.shape[0])
    c_norm = float(np.linalg.norm(centroid))
    if c_norm == 0.0:
        return 1.0
    cos = _unit_rows(priors) @ (centroid / c_norm)
    return float(min(1.0, max(0.0, 1.0 - float(np.max(cos)))))


def episode_features(
    turns: Sequence[EpisodeTurn],
    vectors: Vectors | None = None,
    prior_centroids: Vectors | Sequence[Sequence[float]] | None = None,
) -> EpisodeFeatures:
    """Count what makes an episode matter; see `EpisodeFeatures`."""
    users = [t for t in turns if t.role == "user"]
    nov: float | None = None
    if vectors is not None and prior_centroids is not None and np.asarray(vectors).size:
        nov = novelty(vectors, prior_centroids)
    return EpisodeFeatures(
        n_turns=len(turns),
        n_chars=sum(len(t.text) for t in turns),
        tool_errors=sum(1 for t in turns if _tool_failed(t)),
        corrections=sum(
            1 for t in users if t.kind == "user-correction" or _CORRECTION.search(t.text)
        ),
        decisions=sum(
            len(_DECISION.findall(t.text)) for t in turns if t.role in ("user", "assistant")
        ),
        first_person_facts=sum(len(_FIRST_PERSON.findall(t.text)) for t in users),
        questions=sum(1 for t in users if "?" in t.text),
        significant=sum(len(_SIGNIFICANT.findall(t.text)) for t in turns if t.role != "tool"),
        novelty=nov,
    )


def _tool_failed(t: EpisodeTurn) -> bool:
    """A tool error by kind, or a tool's output that reads as a failure."""
    if t.kind == "tool-error":
        return True
    return t.role == "tool" and t.kind != "tool-success" and bool(_TOOL_FAILURE.search(t.text))


# --- the offline score --------------------------------------------------------

# feature -> (weight, saturation constant k); term = weight * (1 - exp(-x / k))
OFFLINE_TERMS: dict[str, tuple[float, float]] = {
    "tool_errors": (2.0, 1.5),
    "corrections": (1.5, 1.0),
    "decisions": (2.0, 1.5),
    "significant": (2.5, 1.5),
    "first_person_facts": (1.0, 2.0),
    "questions": (0.5, 2.0),
    "length_turns": (0.75, 6.0),  # x = n_turns - 1
    "length_chars": (0.75, 1500.0),  # x = n_chars
    "novelty": (1.0, 0.0),  # linear: weight * novelty, unknown adds nothing
}
OFFLINE_TOTAL = sum(w for w, _ in OFFLINE_TERMS.values())
OFFLINE_CURVE = 4.0


def _saturate(x: float, k: float) -> float:
    return 1.0 - math.exp(-x / k)


def offline_terms(features: EpisodeFeatures) -> dict[str, float]:
    """The weighted term of each feature (see `offline_salience`)."""
    f = features
    x = {
        "tool_errors": f.tool_errors,
        "corrections": f.corrections,
        "decisions": f.decisions,
        "significant": f.significant,
        "first_person_facts": f.first_person_facts,
        "questions": f.questions,
        "length_turns": max(0, f.n_turns - 1),
        "length_chars": f.n_chars,
    }
    terms = {
        name: OFFLINE_TERMS[name][0] * _saturate(v, OFFLINE_TERMS[name][1]) for name, v in x.items()
    }
    terms["novelty"] = OFFLINE_TERMS["novelty"][0] * (f.novelty or 0.0)
    return terms


def offline_salience(features: EpisodeFeatures) -> tuple[int, str]:
    """A deterministic 1-10 salience from the episode's features.

    Each feature x enters as a saturating term w * (1 - exp(-x / k)), so the
    first tool error counts more than the fifth and no single feature can take
    over; novelty n in [0, 1] enters linearly as 1.0 * n (unknown: 0):

        raw   = 2.0*sat(tool_errors, 1.5) + 1.5*sat(corrections, 1.0)
              + 2.0*sat(decisions, 1.5)   + 2.5*sat(significant, 1.5)
              + 1.0*sat(first_person_facts, 2.0) + 0.5*sat(questions, 2.0)
              + 0.75*sat(n_turns - 1, 6) + 0.75*sat(n_chars, 1500) + 1.0*novelty
        W     = 12 (the sum of the weights, the supremum of raw)
        g     = (1 - exp(-raw / 4)) / (1 - exp(-W / 4))       in [0, 1]
        score = 1 + round(9 * g)                               in 1..10

    The concave map g spreads ordinary episodes (raw 1-6) over 3-8 instead of
    bunching them, a two-line exchange lands at 1-2, and only episodes with
    errors, corrections, decisions and significant events together reach 9-10.
    Every term is non-decreasing in its count, so adding a tool error, a
    correction or a decision never lowers the score.
    """
    terms = offline_terms(features)
    raw = sum(terms.values())
    g = (1.0 - math.exp(-raw / OFFLINE_CURVE)) / (1.0 - math.exp(-OFFLINE_TOTAL / OFFLINE_CURVE))
    score = int(min(10, max(1, 1 + round(9.0 * g))))
    return score, _rationale(features, terms, score)


def _rationale(features: EpisodeFeatures, terms: Mapping[str, float], score: int) -> str:
    f = features
    parts = [
        (terms["tool_errors"], f"{f.tool_errors} tool error(s)"),
        (terms["corrections"], f"{f.corrections} correction(s)"),
        (terms["decisions"], f"{f.decisions} decision(s)"),
        (terms["significant"], f"{f.significant} significant event(s)"),
        (terms["first_person_facts"], f"{f.first_person_facts} personal fact(s)"),
        (terms["questions"], f"{f.questions} question(s)"),
    ]
    shown = [text for weight, text in sorted(parts, key=lambda p: -p[0]) if weight > 0]
    shown.append(f"{f.n_turns} turns")
    if f.novelty is not None:
        shown.append(f"novelty {f.novelty:.2f}")
    return f"offline score {score}: " + ", ".join(shown)


# --- summary ------------------------------------------------------------------


def extractive_summary(
    texts: Sequence[str],
    vectors: Vectors | None = None,
    *,
    roles: Sequence[str] | None = None,
    max_chars: int = SUMMARY_CHARS,
) -> str:
    """The most central turn as one line of at most max_chars.

    With one vector per text, the turn with the highest mean cosine to the
    others; without vectors, the longest user turn (the longest turn when no
    roles are given or no turn is the user's). Tool and system turns are
    passed over when the episode has any user or assistant turn. Ties go to
    the earliest turn.
    """
    if not texts:
        return ""
    if roles is not None and len(roles) != len(texts):
        raise ValueError("roles and texts differ in length")
    pool = list(range(len(texts)))
    if roles is not None:
        spoken = [i for i in pool if roles[i] in ("user", "assistant")]
        pool = spoken or pool
    v = None if vectors is None else np.asarray(vectors, dtype=np.float64)
    if v is not None and v.ndim == 2 and v.shape[0] == len(texts) and len(texts) > 1:
        unit = _unit_rows(v)
        sim = unit @ unit.T
        centrality = (sim.sum(axis=1) - np.diag(sim)) / (len(texts) - 1)
        best = max(pool, key=lambda i: (float(centrality[i]), -i))
    else:
        users = [i for i in pool if roles is not None and roles[i] == "user"]
        best = max(users or pool, key=lambda i: (len(texts[i].strip()), -i))
    return one_line(texts[best], max_chars)


# --- the LLM answer and the result ---------------------------------------------


class SalienceRating(BaseModel):
    """What the anchored prompt asks for."""

    model_config = ConfigDict(frozen=True)

    score: Score = Field(description="1 = mundane ... 10 = extremely poignant")
    rationale: str = Field(default="", max_length=600, description="why, one or two sentences")
    summary: str = Field(default="", max_length=200, description="one line: what happened")

    @field_validator("summary", "rationale", mode="before")
    @classmethod
    def _one_line(cls, v: Any) -> Any:
        return " ".join(v.split()) if isinstance(v, str) else v

    @classmethod
    def offline_answer(cls, context: dict[str, Any]) -> SalienceRating:
        raw = context.get("features")
        if raw is None:
            raise ValueError("offline salience needs context['features']")
        features = raw if isinstance(raw, EpisodeFeatures) else EpisodeFeatures.from_mapping(raw)
        score, rationale = offline_salience(features)
        summary = (
            one_line(str(context.get("summary", "")), SUMMARY_CHARS)
            if context.get("summary")
            else ""
        )
        return cls(score=score, rationale=one_line(rationale, 600), summary=summary)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class SalienceResult:
    score: int
    rationale: str
    summary: str
    source: str  # model name, "offline" or "offline-fallback"
    error: str | None
    features: EpisodeFeatures

    @classmethod
    def of(
        cls,
        rating: SalienceRating,
        source: str,
        error: str | None,
        features: EpisodeFeatures,
        offline_summary: str,
    ) -> SalienceResult:
        """A rating as the result: the model's summary only when a model answered
        with one, else the offline summary."""
        from_model = source not in (OFFLINE, OFFLINE_FALLBACK)
        return cls(
            score=int(rating.score),
            rationale=rating.rationale,
            summary=one_line(rating.summary, SUMMARY_CHARS)
            if from_model and rating.summary
            else offline_summary,
            source=source,
            error=error,
            features=features,
        )
