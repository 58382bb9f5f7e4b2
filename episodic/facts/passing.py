"""Facts a sentence states in passing, wherever they sit in it (even in a
request or a question, which the rule table skips):

- a named relative or pet: "a birthday message for my boyfriend Tom", "my
  cat Miso keeps scratching";
- a pet named after its kind was said: "... a toy for a ferret? Mine's called
  Pickle" (the last animal the turn named);
- a job in a frame: "on top of my day job as a cartographer" (only "my":
  "my sister got a job as a midwife" is hers);
- a tool the user calls theirs: "configuring my emacs for rust dev" (both);
- a thing the user calls theirs by its brand: "My Vespa won't start";
- a denied assumption: "people assume I'm vegetarian ... but I'm not".

A mention the turn's facts already hold (by name) adds nothing, and a
sentence that ends or changes something ("ditched my emacs", "switched from
my vim") says nothing about what is used now.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from episodic.facts.jobs import JOB
from episodic.facts.negation import is_ending
from episodic.facts.offline_rules import PETS, RELATIONS
from episodic.facts.slots import TOOL_WORD
from episodic.facts.when import WEEKDAYS

_NAMED = re.compile(rf"\b[Mm]y (?P<a>{RELATIONS}) (?P<n>(?-i:[A-Z])[a-z][\w-]+)\b")
_PET_KIND = re.compile(
    r"\b(?:an?|my|our)(?: (?:second|third|new|little|baby|rescue|other))? "
    rf"(?P<a>{'|'.join(PETS)})\b",
    re.I,
)
# what follows "named" / "called" when it is no name ("called her yesterday")
_NO_NAME = (
    r"(?!(?:after|that|this|the|a|an|and|so|because|today|yesterday|tonight|back|again|"
    r"earlier|later|last|about|out|up|on|for|to|at|in|twice|once)\b)"
)
_MINE_NAMED = re.compile(
    r"\b(?:(?:mine|ours)(?:'s| is) (?:called|named)|(?:her|his|its|their) name(?:'s| is)"
    rf"|(?:i |we )?(?:named|called) (?:her|him|it|them)) (?P<n>{_NO_NAME}[A-Z][\w-]+)",
    re.I,
)
# "we got a second one, a kitten called mochi": a pet the user got, named with its kind
_GOT_KIND_NAMED = re.compile(
    r"\b(?:i|we)(?:'ve| have)? (?:just |finally |also )*(?:got|adopted|rescued|brought home|"
    r"bought|have|own)\b[^.?!]*?\b(?:an?|my|our)(?: (?:second|third|new|little|baby|rescue|"
    rf"other))? (?P<a>{'|'.join(PETS)}) (?:named|called) "
    rf"(?P<n>{_NO_NAME}[A-Za-z][\w-]+)",
    re.I,
)
_JOB_AS = re.compile(
    r"\bmy (?:(?:day|full-time|part-time|main|real|current|paid) )?"
    rf"(?:job|career|work|role|position) as (?P<a>an? )?(?P<x>[\w -]*?\b(?:{JOB}))s?\b",
    re.I,
)
_MY_TOOL = re.compile(
    rf"\b(?P<p>my|our) (?P<t>{TOOL_WORD})|\bfor (?P<u>{TOOL_WORD}) (?:dev|development|work|"
    r"projects?|code|coding|programming|stuff)\b",
    re.I,
)
# a sentence about a change: a tool in it is not simply in use
_CHANGE = re.compile(r"\b(?:switch|migrat|mov(?:e|ed|ing) (?:from|off)|used to|old|former)", re.I)
_MY_BRAND = re.compile(
    r"\b[Mm]y (?P<x>(?-i:[a-z]?[A-Z])[\w-]+(?: (?-i:[A-Z0-9])[\w-]*)?) (?:won't|wont|doesn't|"
    r"isn't|keeps|kept|broke|needs|died|stopped|has|is|just)\b"
)
_NOT_A_BRAND = re.compile(
    rf"^(?:{RELATIONS}|god|lord|{WEEKDAYS}|january|february|march|april|june|july|august|"
    r"september|october|november|december)\b",
    re.I,
)
_DENIED = re.compile(
    r"\b(?:assumes?|thinks?|believes?|says?|expects?|figures?|guess(?:es)?) (?:that )?"
    r"i'?m (?P<x>(?:an? )?[\w-]+)\b.*?\bbut i'?m (?:really |actually |definitely |honestly )?"
    r"not\b",
    re.I,
)


def _named(sentence: str) -> list[str]:
    out = []
    for m in _NAMED.finditer(sentence):
        a, n = m["a"].lower(), m["n"]
        out.append(f"User has a {a} named {n}" if a in PETS else f"User's {a} is {n}")
    return out


def _mine_named(sentence: str, said: str) -> list[str]:
    got = [
        f"User has a {g['a'].lower()} named {g['n']}" for g in _GOT_KIND_NAMED.finditer(sentence)
    ]
    m = _MINE_NAMED.search(sentence)
    kinds = list(_PET_KIND.finditer(f"{said} {sentence[: m.start()]}")) if m else []
    return got + ([f"User has a {kinds[-1]['a'].lower()} named {m['n']}"] if m and kinds else [])


def _tools(sentence: str) -> list[str]:
    if is_ending(sentence.casefold()) or _CHANGE.search(sentence):
        return []
    out = []
    for m in _MY_TOOL.finditer(sentence):
        owner = "Team" if (m["p"] or "").lower() == "our" else "User"
        out.append(f"{owner} uses {m['t'] or m['u']}")
    return out


def _brands(sentence: str) -> list[str]:
    out = []
    for m in _MY_BRAND.finditer(sentence):
        x = m["x"]
        if not _NOT_A_BRAND.match(x) and not re.fullmatch(TOOL_WORD, x, re.I):
            out.append(f"User has {'an' if x[0].lower() in 'aeiou' else 'a'} {x}")
    return out


def in_passing(sentence: str, said: str, facts: Sequence[str]) -> list[str]:
    """The facts `sentence` mentions in passing that none of `facts` (the turn's
    so far) holds already; `said` is the turn's text before the sentence. A
    name already held is held; anything else must be held in the same words."""
    names = [*_named(sentence), *_mine_named(sentence, said)]
    found = [
        *((f, f.split(" ")[-1]) for f in names),
        *(
            (f, f.removeprefix("User ").removeprefix("Team "))
            for f in (
                *(f"User works as {m['a'] or ''}{m['x']}" for m in _JOB_AS.finditer(sentence)),
                *_tools(sentence),
                *_brands(sentence),
                *(f"User is not {m['x']}" for m in _DENIED.finditer(sentence)),
            )
        ),
    ]
    out: list[str] = []
    for fact, key in found:
        if not any(key.casefold() in f.casefold() for f in (*facts, *out)):
            out.append(fact)
    return out
