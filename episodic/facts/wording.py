"""A clause's words as a fact's words: the first person shifted to the third,
trailing context cut, empty objects refused, verbs put in the third person.

Shared by the rule tables (`offline_rules`, `indirect`): each row's builder
turns the named groups of its match into facts with these.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Build = Callable[[re.Match[str]], list[str]]

_PRONOUNS = {"my": "their", "mine": "theirs", "me": "them", "myself": "themselves",
             "our": "their", "ours": "theirs", "us": "them", "ourselves": "themselves",
             "i": "they", "i'm": "they are", "we": "they", "we're": "they are"}  # fmt: skip
# "us" lowercase and not a country's ("the US", "a us citizen")
_PRONOUN_RE = re.compile(
    r"\b(?:i'm|we're|my|mine|me|myself|our|ours|(?-i:us)(?! (?:citizens?|citizenship|passport|"
    r"visa|residents?|army|navy|military|government|dollars?|market|based|office|branch)\b)|"
    r"ourselves|i|we)\b",
    re.I,
)
_THEY_WAS = re.compile(r"\bthey was\b")
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is"}
_EMPTY_OBJECT = re.compile(
    r"^(?:it|that|this|these|those|you|your|them|to|so|too|an? (?:question|problem|issue|"
    r"idea|doubt|feeling|minute|second|moment|look|sec|bit|little)|no idea|some questions?|"
    r"one|something|anything|nothing)\b",
    re.I,
)
# a trailing clause is context, not part of the fact ("..., so schedule ...")
TAIL = re.compile(
    r",\s*(?:so|because|but|which|since|and|as|not|though|although|if)\b.*$"
    r"|\s+(?:and|but) (?:he|she|it|they|we|i|i'm)\b.*$"
    r"|\s+but (?:this|that|these|those|the|my|our|its|it's)\b.*$"
    # "Porto not Lisbon": the value it is not
    r"|\s+not [\w-]+$"
    # "... and the winters are killing me": a new subject with its own verb
    r"|\s+and (?:the|this|that|these|those) [\w'-]+(?: [\w'-]+)? (?:(?:only|just|still) )?"
    r"(?:is|are|was|were|has|have|keeps?|kept|won't|can't|just|never|always|wants?|needs?|"
    r"loves?|hates?|thinks?|says?)\b.*$"
    # "... so please don't suggest ...": a request that follows the fact
    r"|,?\s+so (?:please|pls|plz|don't|do not|can you|could you|you)\b.*$"
    r"|\s+on top of\b.*$"
    # "... to aimovig, the brain fog was too much": a new subject after a comma
    r"|,\s+(?-i:(?:the|it|it's|this|that|these|those|a|an|his|her|their|its)) (?:[\w'-]+ ){1,3}"
    r"(?:is|are|was|were|has|had)\b.*$"
    # "... at stripe and trying to get better at ...": what they are doing besides
    r"|\s+and (?:also )?(?-i:[a-z]+ing)\s.*$"
    # "..., nice to meet you Kevin", ", are you married": a clause to the listener
    r"|\s*,\s+[^,]*\byou\b.*$"
    # "..., they cut the whole qa team": a new clause about someone else
    r"|,\s+(?-i:(?:they|he|she|you))\s+\w.*$"
    # a purpose: "moved to el paso to be closer to my mom"
    r"|\s+(?:in order )?to be (?:closer|near|nearer|with)\b.*$|\s+in order to\b.*$"
    r"|\s+(?:because|since|so that|if|unless)\b.*$"
    # "... pets myself so no clue": a consequence with its own subject
    r"|\s+so (?:no|i|i'm|i've|idk|we|they|it's|its|that's|at least|now)\b.*$"
    r"|,?\s+(?:now|these days|nowadays|currently|for now|at the moment|right now)$"
    r"|,\s*(?:remember|you know|as i said|like i said)$"
    r"|,?\s+(?:btw|by the way|fyi|lol|haha|tbh|though|tho|too|as well)$",
    re.I,
)


_IRREGULAR_PAST = frozenset(
    "bought took had began found left sold sent spent built brought caught taught lost met "
    "paid ran sat won wrote drove ate drank flew gave grew led lent rode sang slept spoke "
    "stood swam threw woke broke chose fell held hurt put set shut tore wore saw did said "
    "came became heard knew thought felt got forgave forgot".split()
)


def is_past(v: str) -> bool:
    """A verb in the past: -ed, or an irregular past, prefixed or not ("misspoke")."""
    bare = re.sub(r"^(?:mis|re|over|under|out|with|fore|up)(?=[a-z]{3})", "", v)
    return (v.endswith("ed") and len(v) > 4) or v in _IRREGULAR_PAST or bare in _IRREGULAR_PAST


def third_person(verb: str) -> str:
    low = verb.casefold()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def shift(text: str) -> str:
    """First person to third person, whitespace collapsed, trailing punctuation cut."""
    out = _PRONOUN_RE.sub(lambda m: _PRONOUNS[m.group(0).casefold()], text)
    # "when I was younger" -> "when they were younger", not "they was"
    out = _THEY_WAS.sub("they were", out)
    return " ".join(out.split()).rstrip(" ,.!;:-")


def trimmed(text: str) -> str:
    """`text` without its tails, in the third person."""
    x = text
    # a tail may end in another ("peanuts, by the way, so no peanut recipes")
    while (cut := TAIL.sub("", x)) != x:
        x = cut
    return shift(x)


def obj(text: str) -> str | None:
    """The object of a clause as it goes into a fact, or None when it carries none."""
    x = trimmed(text)
    return None if not x or _EMPTY_OBJECT.match(x) else x


def fmt(template: str) -> Build:
    """A builder filling {x} (the checked object) and the other named groups."""

    def build(m: re.Match[str]) -> list[str]:
        x = obj(m["x"])
        if x is None:
            return []
        groups = {k: (v or "") for k, v in m.groupdict().items() if k != "x"}
        # {subject}: "User" for I, "Team" for we (a row with an `s` group)
        groups["subject"] = "Team" if groups.get("s", "").casefold() == "we" else "User"
        return [template.format(x=x, **groups)]

    return build
