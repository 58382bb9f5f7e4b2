"""Retrieval scoring for the shipped search (episodic/service/search.py):
reciprocal-rank fusion of the text and vector rankings, put on a fixed
[0, 1] scale, plus small weights of recency and importance.

Recency decays with the wall-clock hours since an item was last accessed
(Generative Agents, but in hours rather than by rank position). Pure
functions over plain values: the candidates come from storage (vector and
full-text search), the ranking goes back to the caller, which records the
recall of every returned item.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from episodic.models import utc


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


# --- the shipped design (docs/retrieval.md; chosen on LoCoMo dev5, in-sample) -----

RRF_K = 60
W_TEXT = 1.0  # BM25 over turn documents
# cosine over turn vectors, at equal weight since the turns' query lost the
# speakers' names (which drew greetings) and turns gained passage relevance:
# REALTALK dev5 .770 -> .786, LoCoMo dev5 .913 -> .914 within 50 turns
# (in-sample; .778-.786 / .913-.917 from 0.6 to 1.0; half weight had been
# chosen on the prototype, where equal weight cost LoCoMo 3-4 points)
W_DENSE = 1.0
# a turn hit returns itself alone: passage relevance already ranks its
# neighbours when they are relevant, and a neighbour on each side spent two of
# every three returned turns on ones that mostly were not (REALTALK dev5 .786
# -> .808, LoCoMo dev5 .914 -> .919 within 50 turns, in-sample; 2 a side: .772)
CONTEXT_TURNS = 0
# a third ranking of turns, by the best cosine among the turn and the turns
# just before and after it in its stream: in real chats the answer is the
# message next to the one worded like the question (REALTALK dev5 .808 ->
# .824, LoCoMo dev5 .919 -> .918 within 50 turns, in-sample; weight .5: .825
# / .915, a window of 2 a side or the mean instead of the best: lower)
W_SPREAD = 0.3
CONTEXT_GAP_MINUTES = 30.0  # context never crosses a gap this long (the detector's time-gap cut)
IMAGE = " [image: {}]"


def turn_line(speaker: str, text: str, caption: str | None = None) -> str:
    """One turn as BM25 sees it: `speaker: text [image: caption]`."""
    line = f"{speaker}: {text}"
    return line + IMAGE.format(caption) if caption else line


RUN_LINES = 3  # at most this many turns before a turn in its search document


def turn_doc(line: str, previous: str | None, day: str | None = None) -> str:
    """The search document of a turn: the day it was said (`day_words`), the
    turns before it (`doc_before`) and the turn itself, last. An answer is
    found by the words of the question that drew it (+4 points of evidence
    recall on dev5)."""
    return "\n".join(x for x in (day, previous, line) if x)


# relative days a turn names, resolved against the day it was said
_RELATIVE_DAYS = (
    (re.compile(r"\b(yesterday|last night)\b", re.IGNORECASE), -1),
    (re.compile(r"\btomorrow\b", re.IGNORECASE), 1),
)


def days_of(text: str, ts: datetime) -> str:
    """`day_words` of the day a turn was said, then of each day it names
    relative to it ("yesterday", "last night", "tomorrow")."""
    days = [ts] + [ts + timedelta(days=d) for rx, d in _RELATIVE_DAYS if rx.search(text)]
    return "\n".join(day_words(d) for d in days)


def day_words(ts: datetime) -> str:
    """The day of a turn as questions name it ("on 29 Dec 2023", "29 December
    2023"): BM25 then finds what was said that day."""
    month = _MONTHS[ts.month - 1]
    return f"{ts.day} {month[:3]} {month} {ts.year}"


# English whatever the process's locale (strftime's %B follows it)
_MONTHS = (
    "January February March April May June July August September October November December"
).split()


def doc_before(speaker: str, earlier: Sequence[tuple[str, str]]) -> str | None:
    """What precedes a turn in its document, from `earlier` (speaker, line) pairs,
    nearest first, each within the context gap of the next: the turn before it,
    and when that is the same speaker's (one message sent as several), back
    through that run to the other speaker's turn that drew it, at most
    `RUN_LINES` turns."""
    lines: list[str] = []
    for who, line in earlier[:RUN_LINES]:
        lines.append(line)
        if who != speaker:
            break
    return "\n".join(reversed(lines)) or None


def relevance(
    rrf: float, *, w_text: float = W_TEXT, w_dense: float = W_DENSE, k: int = RRF_K
) -> float:
    """RRF on a fixed [0, 1] scale: divided by its largest possible value (first
    in both rankings), never by the best score among the candidates."""
    top = (w_text + w_dense) / (k + 1)
    return min(1.0, max(0.0, rrf / top)) if top > 0 else 0.0


# a turn's relevance is half its own and half the mean relevance of the turns
# within this many seqs either side (the passage it sits in; turns that are not
# candidates count 0): evidence comes in passages, and an answer worded unlike
# the question sits among turns worded like it (REALTALK dev5 .755 -> .770,
# LoCoMo dev5 .908 -> .913 within 50 turns, in-sample; flat from 4 to 6)
PASSAGE_TURNS = 5
# ... in a store of at least this many turns: in a few dozen, a passage is a
# large part of the store, and the turns near the best hit outrank the answer
# (current truth: "Charging at home is so convenient." over the Tesla turn)
PASSAGE_MIN_TURNS = 100


def passage_relevance(own: float, around: Sequence[float], n: int = PASSAGE_TURNS) -> float:
    """Half `own`, half the mean of `around` (the relevance of the candidate
    turns among the 2n around a turn) over all 2n: still on [0, 1]."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    return 0.5 * own + 0.5 * sum(around) / (2 * n)


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
    rrf: float,
    last_access: datetime,
    importance_0_10: float,
    now: datetime,
    w: ScoreWeights,
    around: Sequence[float] | None = None,
) -> Components:
    """The fixed-scale score of one hit; importance is on the 0-10 salience scale.
    A turn's `around` (the RRF of the candidate turns within `PASSAGE_TURNS`
    seqs) makes its relevance a `passage_relevance`."""
    rel = relevance(rrf)
    if around is not None:
        rel = passage_relevance(rel, [relevance(x) for x in around])
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


# --- lexical terms every item shares; statements of a value no longer true --------

_WORD = re.compile(r"[a-z0-9]+")
_NAME = re.compile(r"[^\W\d_]+(?: [^\W\d_]+)*")  # a person's name: letters, spaces
SHARED_SHARE = 0.8  # a query word in this share of the nearest rows ranks nothing
SHARED_MIN_ROWS = 3  # too few rows to tell a shared word from a relevant one
# every fact is written "User ..." or "Team ..." (`episodic.facts.wording`): the
# words name whom it is about, not what, and match a question's "user" in
# every fact however few the user has
ITEM_SUBJECTS = ("user", "users", "team")
STALE_PENALTY = 0.5  # a turn stating a superseded value ranks below what replaced it
# a fact or reflection must be at least this near in cosine (a word match alone
# may be "the"): rank fusion alone gives the few items a user has near-equal
# relevance
ITEM_COSINE_FLOOR = 0.15
# ... and this near when no query word reaches it: all-MiniLM-L6-v2 puts
# unrelated short sentences at 0-0.3 ("does the user have a pet" / "User moved
# to Berlin" .16), a paraphrase above .4 ("where does the user live" / "User
# moved to Berlin" .47)
ITEM_MEANING_FLOOR = 0.3
_STOP = frozenset(
    "a an and are as at be been but by do does did for from had has have he her his i in "
    "is it its me my now of on or our she so that the their them they this to was we were "
    "what when where which who will with you your user users".split()
)


def _stem(w: str) -> str:
    """A crude plural / third-person fold (lives -> live, cats -> cat)."""
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def words(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(text.lower())]


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in _STOP}


def rarer_terms(query: str, texts: Sequence[str], share: float = SHARED_SHARE) -> str:
    """The query without the words that at least `share` of `texts` hold (the
    user's nearest facts, say: "user" is in every one, so BM25 on it ranks by
    length alone). Unchanged when there are too few texts to tell."""
    if len(texts) < SHARED_MIN_ROWS:
        return query
    df: dict[str, int] = {}
    for t in texts:
        for w in set(words(t)):
            df[w] = df.get(w, 0) + 1
    cut = share * len(texts)
    kept = [w for w in _WORD.findall(query.lower()) if df.get(_stem(w), 0) < cut]
    return " ".join(kept)


def without_speakers(query: str, speakers: Collection[str]) -> str:
    """The query as turns are searched: without the speakers' names ("What
    games do Nicolas and Nebraas play?" -> "What games do and play?"). A
    turn's vector embeds its text alone, so a name in the query draws the
    turns that say it (greetings); in BM25 it matches every turn of that
    speaker and the turns after them (REALTALK dev5 .741 -> .755, LoCoMo dev5
    .904 -> .908 within 50 turns, in-sample). A query of names alone is kept.
    Only a speaker of letters and spaces is a person ("elise", "Ann Lee"): a
    label such as "code-review-bot" would take "code" out of every question."""
    names = {w for s in speakers for w in _name_words(s)}
    kept = [w for w in query.split() if _bare(w) not in names]
    return " ".join(kept) if kept and len(kept) < len(query.split()) else query


# a question that names one of the people who speak is answered in that
# person's own messages (of the evidence of such questions, 96.7% on REALTALK
# dev5, 82% on LoCoMo dev5): a turn of anyone else counts at this share of its
# fused score (REALTALK dev5 .824 -> .844, LoCoMo dev5 .918 -> .923 within 50
# turns, in-sample; .3: .844 / .923, .7: .838; 0, only the named person's
# turns: .857 / .743)
OTHER_SPEAKER = 0.5


def named_speaker(query: str, speakers: Collection[str]) -> str | None:
    """The one speaker (a person, as `without_speakers` reads names) whom the
    query names; None when it names none or several."""
    words = {_bare(w) for w in query.split()}
    named = [s for s in speakers if any(w in words for w in _name_words(s))]
    return named[0] if len(named) == 1 else None


# a capitalised word after these is more often a day or a month than a person
# ("in June", "since May"); one before a number is a date ("May 3")
_BEFORE_A_DATE = frozenset(
    "in on since until till before after during of through from by next last this "
    "early late mid every".split()
)


# the user's own question, passed on by their agent ("where do I live now?"),
# as facts say it: all-MiniLM-L6-v2 puts "where do I live" at .19 to "User
# moved to Berlin last week", under the floor of an item no query word reaches
_FIRST_PERSON = (
    (re.compile(r"\bdo I\b"), "does the user"),
    (re.compile(r"\b(?:am I|I am|I'm|I’m)\b"), "the user is"),
    (re.compile(r"\b(?:have I|I have|I've|I’ve)\b"), "the user has"),
    (re.compile(r"\b(?:my|mine)\b", re.I), "the user's"),
    (re.compile(r"\bI\b|\b(?:me|myself)\b", re.I), "the user"),
)


def _as_said_of_the_user(query: str) -> str:
    for pattern, said in _FIRST_PERSON:
        query = pattern.sub(said, query)
    return query


def naming_the_user(query: str, user_id: str) -> str:
    """The query as facts and reflections are searched: they are written
    "User ...", so the user, said in the first person ("what phone do I
    have") or named by the id they are kept under ("Where does Alice live"),
    is written "the user". all-MiniLM-L6-v2 puts "where does alice live" at
    .26 to "User moved to Berlin last week", under the floor of an item no
    query word reaches, against .50 for "where does the user live". The id
    counts only when it is a person's name (letters and spaces), written as
    one: capitalised, not as the query's first word unless possessive (an id
    such as "default" is a word too: "Default timeout?"), not as a date ("in
    June", "May 3")."""
    query = _as_said_of_the_user(query)
    names = sorted(set(_name_words(user_id)), key=len, reverse=True)
    if not names:
        return query
    alt = "|".join(re.escape(n) for n in names)
    found = re.compile(rf"\b(?:{alt})(?:\s+(?:{alt}))*\b(['\u2019]s\b)?(?=(\s*\d)?)", re.I)

    def the_user(m: re.Match[str]) -> str:
        before = query[: m.start()].split()
        first = not before
        as_name = (
            m.group(0)[0].isupper()
            and (not first or m.group(1) is not None)
            and (first or before[-1].lower() not in _BEFORE_A_DATE)
            and m.group(2) is None
        )
        if not as_name:
            return m.group(0)
        return ("The user" if first else "the user") + (m.group(1) or "")

    return found.sub(the_user, query)


def _name_words(speaker: str) -> list[str]:
    """The words of a speaker's name, none unless it is a person's name."""
    return _WORD.findall(speaker.lower()) if _NAME.fullmatch(speaker) else []


def _bare(word: str) -> str:
    """A query word as a name: lower case, no possessive 's, letters and digits."""
    w = re.sub(r"['\u2019]s\b", "", word.lower())
    return "".join(_WORD.findall(w))


class StaleValues:
    """The values of the facts that are no longer true, read once for all the
    turns a search scores (their words were split again for every candidate
    turn and stale fact: 7% of a consolidation's Python, in its reflections'
    evidence searches).

    A turn states one when, for some stale fact (its text, and the text of the
    fact that replaced it or None), it holds a word that only the stale fact
    has, at least half of its content words, and none of the words that only
    its replacement has ("I live in Lisbon" against "User lives in Lisbon" ->
    "User lives in Amsterdam"; "I moved to Amsterdam from Lisbon" is current)."""

    def __init__(self, stale: Sequence[tuple[str, str | None]]) -> None:
        # (content words of the old fact, words only it has, words only its
        # replacement has), for each old fact with a word of its own
        self._values: list[tuple[frozenset[str], frozenset[str], frozenset[str]]] = []
        for old, new in stale:
            c_old = content_words(old)
            c_new = content_words(new) if new else set()
            if c_old - c_new:
                self._values.append(
                    (frozenset(c_old), frozenset(c_old - c_new), frozenset(c_new - c_old))
                )
        self._any = frozenset().union(*(only for _, only, _ in self._values))

    def __bool__(self) -> bool:
        return bool(self._values)

    def stated_by(self, line: str) -> bool:
        have = set(words(line))
        if have.isdisjoint(self._any):
            return False
        for c_old, only_old, only_new in self._values:
            if have.isdisjoint(only_old) or 2 * len(have & c_old) < len(c_old):
                continue
            if have.isdisjoint(only_new):
                return True
        return False
