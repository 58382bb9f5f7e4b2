"""Importance-triggered reflection: the trigger, the answer schemas, the evidence checks.

When the salience summed over a user's episodes closed since the last
reflection reaches a threshold (150 on the 1-10 scale, as in Generative
Agents), the reflect flow asks focal questions about the recent episodes,
retrieves for each, and asks for insights that cite their evidence by the
numbers shown in the prompt. `map_evidence` turns those numbers back into ids
with a range check; `validate_evidence` keeps only ids that exist and belong
to the user. Offline, `offline_reflect` finds recurring themes instead.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from episodic.errors import EpisodicError
from episodic.prompts import one_line

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 150.0
INSIGHT_CHARS = 500
MAX_EVIDENCE = 20


class EvidenceError(EpisodicError, ValueError):
    """An insight cited evidence that is out of range, unknown or another user's."""

    def __init__(self, evidence: object, reason: str) -> None:
        super().__init__(f"evidence {evidence!r}: {reason}")
        self.evidence = evidence
        self.reason = reason


# --- the trigger ----------------------------------------------------------------


def salience_since(saliences: Sequence[int | float]) -> float:
    """Sum of the salience of the episodes closed since the last reflection.

    Unscored episodes (0) add nothing; values outside 0..10 are refused.
    """
    total = 0.0
    for s in saliences:
        if not 0 <= s <= 10:
            raise ValueError(f"salience must be in 0..10, got {s}")
        total += float(s)
    return total


def should_reflect(total: float, threshold: float = DEFAULT_THRESHOLD) -> bool:
    """True once the accumulated salience reaches the threshold (>=)."""
    if not threshold > 0:
        raise ValueError(f"threshold must be positive, got {threshold}")
    return total >= threshold


# --- response models --------------------------------------------------------------

Question = Annotated[str, StringConstraints(strip_whitespace=True, min_length=3, max_length=300)]
StatementNo = Annotated[int, Field(ge=1, le=1000)]


@dataclass(frozen=True, slots=True)
class ReflectionSource:
    """A recent episode (or fact) as reflection reads it."""

    item_id: str
    text: str
    salience: float = 5.0


class FocalQuestions(BaseModel):
    model_config = ConfigDict(frozen=True)

    questions: list[Question] = Field(min_length=1, max_length=5)

    @classmethod
    def offline_answer(cls, context: dict[str, Any]) -> FocalQuestions:
        """A question per recurring theme of context['statements'] (at most 3)."""
        statements = [str(s) for s in context.get("statements", [])]
        sources = [ReflectionSource(str(i), s) for i, s in enumerate(statements)]
        themes = recurring_themes(sources)[:3]
        questions = [
            one_line(f"What do the recent episodes say about {', '.join(t.terms)}?", 300)
            for t in themes
        ]
        return cls(questions=questions or ["What were the main topics of the recent episodes?"])


class Insight(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: Annotated[
        str, StringConstraints(strip_whitespace=True, min_length=3, max_length=INSIGHT_CHARS)
    ]
    evidence: list[StatementNo] = Field(
        min_length=1, max_length=MAX_EVIDENCE, description="numbers of the supporting statements"
    )


class Insights(BaseModel):
    """Zero insights is a legitimate answer: nothing recurs."""

    model_config = ConfigDict(frozen=True)

    insights: list[Insight] = Field(default_factory=list, max_length=5)

    @classmethod
    def offline_answer(cls, context: dict[str, Any]) -> Insights:
        """offline_reflect over context['sources'], cited by 1-based position.

        context['ignore'] optionally lists terms that are not themes (speaker names).
        """
        sources = [_as_source(s) for s in context.get("sources", [])]
        position = {s.item_id: i for i, s in enumerate(sources, start=1)}
        return cls(
            insights=[
                Insight(text=r.text, evidence=[position[e] for e in r.evidence_ids])
                for r in offline_reflect(sources, ignore=context.get("ignore", ()))
            ]
        )


def _as_source(value: Any) -> ReflectionSource:
    if isinstance(value, ReflectionSource):
        return value
    return ReflectionSource(
        str(value["item_id"]), str(value["text"]), float(value.get("salience", 5.0))
    )


# --- evidence ---------------------------------------------------------------------


def _reject(evidence: object, reason: str, strict: bool) -> None:
    if strict:
        raise EvidenceError(evidence, reason)
    log.warning("dropped evidence %r: %s", evidence, reason)


def map_evidence(indices: Iterable[int], ids: Sequence[str], *, strict: bool = False) -> list[str]:
    """Statement numbers (1-based, as shown in the prompt) to ids, in order, deduplicated.

    A number outside 1..len(ids) is dropped with a logged reason, or raises
    EvidenceError when strict.
    """
    out: list[str] = []
    for i in indices:
        if not 1 <= i <= len(ids):
            _reject(i, f"outside the numbered statements 1..{len(ids)}", strict)
            continue
        if ids[i - 1] not in out:
            out.append(ids[i - 1])
    return out


def validate_evidence(
    evidence_ids: Iterable[str],
    *,
    user_id: str,
    owner_of: Mapping[str, str],
    strict: bool = False,
) -> list[str]:
    """Keep the ids that exist and belong to user_id, in order, deduplicated.

    owner_of maps every known id to its user. An unknown id or another user's
    id is dropped with a logged reason, or raises EvidenceError when strict.
    """
    out: list[str] = []
    for item_id in evidence_ids:
        owner = owner_of.get(item_id)
        if owner is None:
            _reject(item_id, "does not exist", strict)
        elif owner != user_id:
            _reject(item_id, "belongs to another user", strict)
        elif item_id not in out:
            out.append(item_id)
    return out


def insight_importance(saliences: Sequence[float]) -> float:
    """Importance of an insight: the mean salience of its evidence, within 1..10."""
    if not saliences:
        return 1.0
    return round(min(10.0, max(1.0, sum(saliences) / len(saliences))), 2)


# --- offline reflection -------------------------------------------------------------

_STOP = frozenset(
    """january february march april june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday
    friday saturday sunday today tomorrow yesterday week weeks month months year years
    morning evening night weekend asked a about above after again against all also am an
    and any are as at be because been
    before being below between both but by can could did do does doing done down during each
    even ever every few for from further get gets getting got had has have having he her here
    hers him his how i if in into is it its itself just know like made make many may me might
    more most much must my myself need no nor not now of off often on once one only or other
    our ours out over own really right same say said see seem she should since so some still
    such sure take than thank thanks that the their theirs them then there these they thing
    things think this those though through to too under until up upon us use used very want
    was way we well were what when where which while who whom why will with would yeah yes yet
    you your yours going goes went come came good great nice okay sounds awesome wow hey
    hi hello ok let lets maybe something anything everything lot time day today tomorrow
    yesterday week year years back first last next new old another thing much love loved feel
    feeling felt glad happy cool amazing definitely totally pretty always never kind sort look
    looking talk talking share sharing hear wonderful excited super little keep help""".split()
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_.+#/']*[A-Za-z0-9+#]|[A-Za-z]")
_TECHNICAL = re.compile(r"[0-9_]|[a-z][A-Z]|\w\.\w|^[A-Z]{2,}[0-9]*s?$")


@dataclass(frozen=True, slots=True)
class Theme:
    terms: tuple[str, ...]
    evidence_ids: tuple[str, ...]
    weight: float


@dataclass(frozen=True, slots=True)
class ReflectedInsight:
    """An insight ready to store: its evidence as ids, its importance on 1..10."""

    text: str
    evidence_ids: tuple[str, ...]
    importance: float


def _terms(text: str, names: frozenset[str]) -> dict[str, tuple[str, bool]]:
    """key -> (surface form, specific) for the theme terms of one text.

    Specific terms are entities (capitalised mid-sentence, or at a sentence
    start when the word is a name, see `_names`) and technical tokens (digits,
    underscores, dotted or camelCase, acronyms); the others are content words
    of four letters or more outside the stopword list.
    """
    found: dict[str, tuple[str, bool]] = {}
    for sentence in _SENTENCE.split(text):
        for pos, token in enumerate(_TOKEN.findall(sentence)):
            token = token.strip("'.").removesuffix("'s")
            key = token.lower()
            if len(key) < 2 or key in _STOP or "'" in key:
                continue
            if _TECHNICAL.search(token):
                found[key] = (token, True)
            elif token[0].isupper() and (pos > 0 or key in names):
                found.setdefault(key, (token, True))
            elif len(key) >= 4 and key.isalpha():
                found.setdefault(key, (key, False))
    return found


def _names(texts: Iterable[str]) -> frozenset[str]:
    """Words that are names: capitalised mid-sentence somewhere, or never seen lowercase."""
    mid: set[str] = set()
    initial: set[str] = set()
    lower: set[str] = set()
    for text in texts:
        for sentence in _SENTENCE.split(text):
            for pos, raw in enumerate(_TOKEN.findall(sentence)):
                token = raw.strip("'.").removesuffix("'s")
                if not token:
                    continue
                if token.islower():
                    lower.add(token)
                elif token[0].isupper():
                    (mid if pos > 0 else initial).add(token.lower())
    return frozenset(mid | {k for k in initial if k not in lower and len(k) >= 3})


def recurring_themes(
    sources: Sequence[ReflectionSource], *, min_support: int = 2, ignore: Iterable[str] = ()
) -> list[Theme]:
    """Terms found in at least min_support sources, grouped by the sources citing them.

    Ranked by support (a specific term counts 1.5 times a plain word), then by
    the summed salience of its sources, then alphabetically. Terms with the
    same set of sources form one theme (at most three terms shown). Terms in
    `ignore` (case-insensitive; e.g. the speakers' own names) are left out.
    """
    skip = {t.lower() for t in ignore}
    names = _names(s.text for s in sources)
    by_key: dict[str, set[int]] = {}
    surface: dict[str, Counter[str]] = {}
    specific: dict[str, bool] = {}
    for idx, source in enumerate(sources):
        for key, (form, spec) in _terms(source.text, names).items():
            if key in skip:
                continue
            by_key.setdefault(key, set()).add(idx)
            surface.setdefault(key, Counter())[form] += 1
            specific[key] = specific.get(key, False) or spec

    def weight(key: str) -> float:
        return len(by_key[key]) * (1.5 if specific[key] else 1.0)

    keys = sorted(
        (k for k, v in by_key.items() if len(v) >= min_support),
        key=lambda k: (-weight(k), -sum(sources[i].salience for i in by_key[k]), k),
    )
    groups: dict[tuple[int, ...], list[str]] = {}
    for key in keys:
        groups.setdefault(tuple(sorted(by_key[key])), []).append(key)
    themes = [
        Theme(
            terms=tuple(surface[k].most_common(1)[0][0] for k in group[:3]),
            evidence_ids=tuple(sources[i].item_id for i in members),
            weight=weight(group[0]),
        )
        for members, group in groups.items()
    ]
    # dict order follows the ranking of each group's best key
    return themes


def offline_reflect(
    episodes: Sequence[ReflectionSource],
    *,
    max_insights: int = 5,
    min_support: int = 2,
    max_evidence: int = MAX_EVIDENCE,
    ignore: Iterable[str] = (),
) -> list[ReflectedInsight]:
    """Deterministic extractive reflection: the recurring themes of recent episodes.

    Each insight names a theme, quotes the most salient episode citing it and
    cites the episodes that mention it (the max_evidence most salient, in
    input order); its importance is the mean salience of those episodes.
    Nothing recurring, no insight.
    """
    if len({e.item_id for e in episodes}) != len(episodes):
        raise ValueError("duplicate item_id among reflection sources")
    salience = {e.item_id: e.salience for e in episodes}
    text_of = {e.item_id: e.text for e in episodes}
    out: list[ReflectedInsight] = []
    themes = recurring_themes(episodes, min_support=min_support, ignore=ignore)
    for theme in themes[:max_insights]:
        top = sorted(theme.evidence_ids, key=lambda i: -salience[i])[:max_evidence]
        cited = tuple(i for i in theme.evidence_ids if i in top)
        example = max(cited, key=lambda i: (salience[i], -cited.index(i)))
        text = (
            f"Recurring theme across {len(theme.evidence_ids)} episodes: {', '.join(theme.terms)}"
            f" keeps coming back (most salient: {one_line(text_of[example], 200)})"
        )
        out.append(
            ReflectedInsight(
                text=one_line(text, INSIGHT_CHARS),
                evidence_ids=cited,
                importance=insight_importance([salience[i] for i in cited]),
            )
        )
    return out
