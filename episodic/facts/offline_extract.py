"""The offline fact extractor: deterministic patterns over the user's own words.

Only turns with role "user" are read (an assistant's guess about the user is
not evidence). Each turn is split into sentences (at . ! ? ; and newlines,
and before ", and I" / "but we" style joins); a sentence that is a question
(ends with "?" or opens with a question word, "if", "would" ...) is skipped.
Lead-ins such as "so", "btw", "actually" are dropped. Then the first pattern
that matches the start of the sentence gives one fact, rewritten in the
third person with "User" or "Team" as its subject:

=====================================  =================================
sentence                               fact
=====================================  =================================
I live in X / I'm living in X          User lives in X
I moved / relocated to X               User moved to X (Team switched
                                       to X when X is a known tool)
I'm from X                             User is from X
my name is X / call me X               User's name is X
I'm N (years old)                      User is N years old
my X is Y / my X are Y                 User's X is Y
I have / own / got a S named N         User has a S named N
I have / own X                         User has X
I like / love / prefer / enjoy /       User likes / loves ... X
hate / dislike X
I work at / for / as / on X            User works at / for / as / on X
I use X / we use X                     User uses X / Team uses X
we switched / migrated / moved to X    Team switched to X
I'm planning / going to X; I plan to   User is planning to X
I / we decided to X                    User / Team decided to X
I no longer X / I don't X anymore      User no longer Xs
I stopped / quit X; we stopped X       User / Team stopped X
I sold my X                            User sold their X
(my) X died / passed away              X died (User's X died)
I'm a / an X                           User is a / an X
=====================================  =================================

Pronouns inside the rest are shifted (my -> their, me -> them, our -> their),
and the fact is cut at 200 characters. Objects that carry no fact ("I like
it", "I have a question") are skipped. Each fact is supported by the index
of the turn it came from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from episodic.facts.slots import tool_name
from episodic.facts.types import FactTurn

MAX_FACT_CHARS = 200

_SPLIT = re.compile(
    r"(?<=[.!?;])\s+|\n+|,?\s+(?=(?:and|but|so) (?:i|i'm|we|my|our)\b)"
    r"|,\s+(?=(?:i|i'm|we|my|our)\s)",
    re.I,
)
_LEAD_IN = re.compile(
    r"^(?:(?:so|well|also|actually|btw|by the way|oh|and|but|anyway|fyi|hey|hi|ok|okay|"
    r"yeah|yes|no|sure|right|true|honestly|just so you know|for context|for the record|"
    r"quick note)[,:!]?\s+)+",
    re.I,
)
_QUESTION = re.compile(
    r"^(?:what|how|why|who|whom|whose|where|when|which|can|could|would|should|will|"
    r"shall|do|does|did|is|are|was|were|am|may|might|if|whether|unless|suppose|imagine)\b",
    re.I,
)
_EMPTY_OBJECT = re.compile(
    r"^(?:it|that|this|these|those|you|your|them|to|an? (?:question|problem|issue|idea|"
    r"doubt|feeling|minute|second|moment|look|sec)|no idea|some questions?)\b",
    re.I,
)
_PRONOUNS = {"my": "their", "mine": "theirs", "me": "them", "myself": "themselves",
             "our": "their", "ours": "theirs", "us": "them", "ourselves": "themselves",
             "i": "they", "i'm": "they are", "we": "they", "we're": "they are"}  # fmt: skip
_PRONOUN_RE = re.compile(r"\b(?:i'm|we're|my|mine|me|myself|our|ours|us|ourselves|i|we)\b", re.I)
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is"}


def _third_person(verb: str) -> str:
    low = verb.casefold()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def _shift(text: str) -> str:
    def swap(m: re.Match[str]) -> str:
        return _PRONOUNS[m.group(0).casefold()]

    out = _PRONOUN_RE.sub(swap, text)
    return " ".join(out.split()).rstrip(" ,.!;:-")


def _first_verb_third_person(rest: str) -> str:
    head, _, tail = rest.partition(" ")
    return f"{_third_person(head)} {tail}".strip()


Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], str | None]]

_I = r"i(?:'m| am)"
_WE = r"(?:we|our team|the team)"


# a trailing clause is context, not part of the fact ("..., so schedule ...")
_TAIL = re.compile(
    r",\s*(?:so|because|but|which|since|and|as)\b.*$"
    r"|\s+(?:and|but) (?:he|she|it|they|we|i|i'm)\b.*$"
    r"|\s+(?:because|since|so that)\b.*$",
    re.I,
)


def _obj(m: re.Match[str], group: str = "x") -> str | None:
    x = _shift(_TAIL.sub("", m[group]))
    return None if not x or _EMPTY_OBJECT.match(x) else x


def _moved(m: re.Match[str]) -> str | None:
    x = _obj(m)
    if x is None:
        return None
    return f"Team switched to {x}" if tool_name(x) else f"User moved to {x}"


def _with(
    build: Callable[[re.Match[str], str], str],
) -> Callable[[re.Match[str]], str | None]:
    """A rule that shifts and checks the object (group "x") before `build` sees it."""

    def rule(m: re.Match[str]) -> str | None:
        x = _obj(m)
        return None if x is None else build(m, x)

    return rule


def _fmt(template: str, group: str = "x") -> Callable[[re.Match[str]], str | None]:
    def build(m: re.Match[str]) -> str | None:
        x = _obj(m, group)
        return None if x is None else template.format(x=x, v=m.groupdict().get("v", ""))

    return build


def _died(prefix: str) -> Callable[[re.Match[str]], str | None]:
    def build(m: re.Match[str]) -> str | None:
        when = _shift(m["t"])
        return f"{prefix}{_shift(m['x'])} {m['v'].lower()}" + (f" {when}" if when else "")

    return build


def _subject(m: re.Match[str]) -> str:
    return "User" if m["s"].casefold() == "i" else "Team"


_RULES: tuple[Rule, ...] = tuple(
    (re.compile(p, re.I), f)
    for p, f in (
        (rf"^(?:i live|{_I} (?:now )?living|{_I} based) in (?P<x>.+)", _fmt("User lives in {x}")),
        (r"^(?:i|we) (?:just |recently |have )?(?:moved|relocated) to (?P<x>.+)", _moved),
        (
            rf"^{_WE} (?:have )?(?:switched|migrated|moved) (?:over )?(?:from .+? )?to (?P<x>.+)",
            _fmt("Team switched to {x}"),
        ),
        (rf"^{_I} (?:originally )?from (?P<x>.+)", _fmt("User is from {x}")),
        (r"^(?:my name is|call me) (?P<x>.+)", _fmt("User's name is {x}")),
        (rf"^{_I} (?P<x>\d{{1,3}})(?: years? old)?$", _fmt("User is {x} years old")),
        (
            r"^my (?P<a>[\w' -]{1,40}?) (?P<v>is|are) (?P<x>.+)",
            _with(lambda m, x: f"User's {m['a']} {m['v']} {x}"),
        ),
        (
            r"^i (?:have|own|got|adopted) (?P<x>(?:an? )?\w+ (?:named|called) \w+.*)",
            _fmt("User has {x}"),
        ),
        (r"^i (?:have|own) (?P<x>.+)", _fmt("User has {x}")),
        (
            r"^i (?:really )?(?P<v>like|love|prefer|enjoy|hate|dislike) (?P<x>.+)",
            _with(lambda m, x: f"User {_third_person(m['v'].lower())} {x}"),
        ),
        (
            r"^i work (?P<v>at|for|as|on) (?P<x>.+)",
            _with(lambda m, x: f"User works {m['v'].lower()} {x}"),
        ),
        (
            r"^(?P<s>i|we|our team) (?:mostly |mainly |now |currently )?use (?P<x>.+)",
            _with(lambda m, x: f"{_subject(m)} uses {x}"),
        ),
        (
            rf"^(?:{_I} (?:planning|going|about) to|i plan to|i intend to) (?P<x>.+)",
            _fmt("User is planning to {x}"),
        ),
        (
            r"^(?P<s>i|we|our team) (?:have |'ve |just )?decided to (?P<x>.+)",
            _with(lambda m, x: f"{_subject(m)} decided to {x}"),
        ),
        (
            r"^i no longer (?P<x>.+)",
            _with(lambda m, x: f"User no longer {_first_verb_third_person(x)}"),
        ),
        (
            r"^i (?:don't|do not) (?P<x>.+?) any ?more\b",
            _with(lambda m, x: f"User no longer {_first_verb_third_person(x)}"),
        ),
        (
            r"^(?P<s>i|we|our team) (?:have |just )?(?:stopped|quit) (?P<x>.+)",
            _with(lambda m, x: f"{_subject(m)} stopped {x}"),
        ),
        (r"^i (?:just )?sold (?P<x>.+)", _fmt("User sold {x}")),
        (r"^my (?P<x>[\w' -]{1,40}?) (?P<v>died|passed away)(?P<t>.*)", _died("User's ")),
        (
            r"^(?!(?:it|this|that|he|she|they|everything|something|nothing)\b)"
            r"(?P<x>[\w'-]{1,40}) (?P<v>died|passed away)(?P<t>.*)",
            _died(""),
        ),
        (rf"^{_I} (?P<x>an? (?!bit\b|little\b|tad\b|lot\b)\w.*)", _fmt("User is {x}")),
    )
)


def extract_sentence(sentence: str) -> str | None:
    """The fact one sentence states, or None (questions and chatter give None)."""
    s = _LEAD_IN.sub("", sentence.strip().replace("\u2019", "'")).strip()
    if not s or s.endswith("?") or _QUESTION.match(s):
        return None
    s = s.rstrip(" .!;:")
    for pattern, build in _RULES:
        m = pattern.match(s)
        if m:
            fact = build(m)
            if fact:
                return fact[:MAX_FACT_CHARS].rstrip()
            return None
    return None


def offline_extract(turns: Sequence[FactTurn]) -> list[tuple[str, list[int]]]:
    """(fact text, [1-based index of its turn]) for every pattern match, in order.

    The same text from several turns is one fact supported by all of them.
    """
    found: dict[str, list[int]] = {}
    for index, turn in enumerate(turns, start=1):
        if turn.role != "user":
            continue
        for sentence in _SPLIT.split(turn.text):
            if not sentence:
                continue
            fact = extract_sentence(sentence)
            if fact is not None and index not in found.setdefault(fact, []):
                found[fact].append(index)
    return list(found.items())
