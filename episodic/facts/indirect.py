"""Rules for facts said sideways: the clause names the fact's consequence, its
setting or its change, not the fact itself.

- a home by its kind: "I'm renting a studio in Narva", "got my own flat in
  Trieste", "I share a house with two flatmates in Tartu" -> lives in X;
- a job by its frame: "I'm the head sommelier there", "started an
  apprenticeship as a locksmith" -> works as X;
- use over time: "I've used Emacs for ten years", "I've had a Criterion
  subscription for years", "I pay for both Audible and Kindle Unlimited",
  "our monorepo uses pnpm", "I'm sticking with Elixir", "I'm on Helix now";
- a taste that ended or moved: "I've gone right off rooibos" (an ending, see
  `endings.LOSE_TASTE`), "it's all genmaicha for me now", "genmaicha is my
  go-to now";
- a trip and its end: "I'm flying to Ulaanbaatar in August" (a plan), "the
  Ulaanbaatar trip is off" (an ending);
- keeping something: "I keep bees" (not "I keep forgetting").

Each row is (pattern, builder) as in `offline_rules`, whose table tries these
first; the patterns use the word classes above, never the words of a case.
"""

from __future__ import annotations

import re

from episodic.facts.endings import LOSE_TASTE
from episodic.facts.jobs import JOB
from episodic.facts.slots import tool_name
from episodic.facts.when import MONTHS, SEASONS, WEEKDAYS
from episodic.facts.wording import Build, fmt, obj, shift

_I = r"i(?:'m| am)"
_IV = r"i(?:'ve| have)?"
_ADV = (
    r"(?:(?:just|now|finally|recently|currently|still|also|actually|completely|totally|kind of|"
    r"sort of|kinda|a bit|really|pretty much) )*"
)
# kinds of home: renting, buying or sharing one "in X" is living in X
DWELLING = (
    r"studio|flat|apartment|house|place|room|home|condo|bungalow|cottage|loft|townhouse|"
    r"bedsit|houseboat|farmhouse|cabin"
)
# a part of a home, and the people one shares it with
HOME_PART = r"balcony|garden|backyard|yard|kitchen|living room|bedroom|street|building|block"
HOUSEHOLD = r"flatmate|roommate|housemate|landlord|landlady"
# plans a user may call off: "the trip is off", "the wedding got cancelled"
_EVENT = (
    r"trip|holiday|vacation|visit|move|wedding|party|plans?|conference|interview|surgery|"
    r"operation|appointment|course|tour|race|marathon|concert|gig|booking|flight|offer|"
    r"deal|sale|launch|honeymoon|retreat|residency|exchange|semester"
)
# a month, a season or a relative time: a trip said with one is a plan
_WHEN = re.compile(
    rf"\b(?:in|on|this|next|over|for|during) (?:the )?(?:{MONTHS}|{SEASONS}|"
    rf"week|weekend|month|year|holidays?|{WEEKDAYS})\b|\btomorrow\b"
    r"|\bin \w+ (?:days|weeks|months)\b",
    re.I,
)
# "I'm on X now" names what is used only when X is not a state one is "on"
_NOT_ON = (
    r"holiday|vacation|leave|call|duty|board|track|break|time|it|mute|fire|top|my|a|an|the|"
    r"this|that|hold|site|strike|medication|meds|antibiotics|shift|nights|days|lunch|"
    r"the way|way|here|there|standby"
)
# the name of a thing that follows "both" or heads a list: "both A and B"
_LIST = re.compile(r"^both (?P<a>.+?) and (?P<b>.+)$|^(?P<c>.+?) and (?P<d>(?-i:[A-Z]).+)$", re.I)


def _items(text: str) -> list[str]:
    """ "both A and B" and "A and B" (B a name) as [A, B]; anything else as [text]."""
    m = _LIST.match(text)
    if m is None:
        return [text]
    return [m["a"] or m["c"], m["b"] or m["d"]]


def _subscribes(m: re.Match[str]) -> list[str]:
    out = []
    for item in _items(m["x"]):
        if x := obj(item):
            out.append(f"User subscribes to {x}")
    return out


def _gone_off(m: re.Match[str]) -> list[str]:
    x = obj(m["x"])
    if x is None:
        return []
    verb = m["v"].lower()
    said = "has gone off" if re.match(r"gone|went", verb) else verb
    return [f"{'User' if m['s'].lower() == 'i' else 'Team'} {said} {x}"]


def _now_prefers(m: re.Match[str]) -> list[str]:
    x = obj(m["x"])
    if x is None:
        return []
    changed = re.search(r"\b(?:now|new|these days|nowadays|lately)\b", m.group(0), re.I)
    return [f"User {'now ' if changed else ''}prefers {x}"]


def _sticking(m: re.Match[str]) -> list[str]:
    x = obj(m["x"])
    if x is None:
        return []
    return [f"User uses {x}"] if tool_name(x) else [f"User is sticking with {x}"]


def _travelling(m: re.Match[str]) -> list[str]:
    x = obj(m["x"])
    if x is None:
        return []
    named = re.sub(r"^the ", "", m["x"])[0].isupper()  # "the Azores" is named
    # "going to Tesco" is an errand, "going to make it this weekend" no trip;
    # "going to the Azores in April" is one
    when = _WHEN.search(m["x"]) is not None
    if not ((named and when) if m["v"].lower() == "going" else (named or when)):
        return []
    return [f"User is travelling to {x}"]


def _cancelled(m: re.Match[str]) -> list[str]:
    x = shift(m["x"])
    owner = "Team's" if m["p"].lower() == "our" else "User's"
    return [f"{owner} {x} is cancelled"]


def _thing_uses(m: re.Match[str]) -> list[str]:
    x = obj(m["x"])
    if x is None:
        return []
    owner = "Team's" if m["p"].lower() == "our" else "User's"
    return [f"{owner} {m['a']} {m['v'].lower()} {x}"]


INDIRECT: tuple[tuple[str, Build], ...] = (
    # a taste that ended: "I've gone right off rooibos"
    (rf"^(?P<s>i|we)(?:'ve| have)? {_ADV}(?P<v>{LOSE_TASTE}) (?P<x>.+)", _gone_off),
    # a home by its kind: renting / buying / sharing one in X
    (
        rf"^(?:i|we)(?:'m|'ve|'re| am| have| are)? {_ADV}(?:renting|rent|rented|bought|got|"
        r"found|own|share|sharing|moved into) (?:an?|my|our|my own|our own|the) "
        rf"(?:[\w-]+ ){{0,3}}?(?:{DWELLING})\b(?P<w> with [\w' -]+?)? in (?P<x>.+)",
        fmt("User lives in {x}"),
    ),
    # a job by its frame: "I'm the head sommelier there", "an apprenticeship as a locksmith"
    (
        rf"^{_I} the (?P<x>(?:[\w-]+ )?{JOB})\b(?=\s*(?:$|,|(?:there|here|at|for|in)\b))",
        fmt("User works as the {x}"),
    ),
    (
        rf"^{_IV} {_ADV}(?:started|begun|began|taken|took|got|landed|accepted|found) "
        r"(?:an? |my )?(?:new )?(?:job|role|position|career|apprenticeship|internship|"
        r"training|placement) as (?P<a>an? )?(?P<x>.+)",
        fmt("User works as {a}{x}"),
    ),
    # use over time
    (r"^i(?:'ve| have) (?:been )?(?:used|using) (?!to\b)(?P<x>.+)", fmt("User uses {x}")),
    (
        r"^(?P<s>i|we)(?:'ve| have) (?:always |long )?had (?P<x>.+?) (?:for|since) "
        r"(?:years|ages|a while|a long time|(?:\w+ )?(?:years|months)|\d{4})\b.*",
        fmt("{subject} has {x}"),
    ),
    (
        rf"^(?:i|{_I}) {_ADV}(?:pay for|subscribe to|subscribed to|have subscriptions? to) "
        r"(?P<x>.+)",
        _subscribes,
    ),
    (
        r"^(?P<p>my|our) (?!team\b)(?P<a>[\w' -]{1,30}?) (?P<v>uses|runs on|is built (?:with|on)|"
        r"is written in) (?P<x>.+)",
        _thing_uses,
    ),
    (rf"^{_I} {_ADV}(?:sticking|staying) (?:with|to) (?P<x>.+)", _sticking),
    (
        rf"^{_I} (?:now )?on (?P<x>(?!(?:{_NOT_ON})\b)[\w.+#-]+)"
        r",? (?:now|these days|nowadays)$",
        fmt("User uses {x}"),
    ),
    # a taste moved: "it's all genmaicha for me now", "genmaicha is my go-to now"
    (
        r"^(?:it's|it is) (?:all|only|just) (?P<x>[\w' -]+?) (?:for me|now|these days)\b.*",
        _now_prefers,
    ),
    (
        r"^(?P<x>(?!(?:it|that|this|there|which|what)\b)[\w' -]{1,30}?) (?:is|are) "
        r"(?:now )?my (?:new )?(?:go-to|favou?rite|fave)(?: now| these days| lately)?$",
        _now_prefers,
    ),
    # a trip: planned, or called off
    (
        # "going to move to Oslo" is a plan (the table's), not a trip
        rf"^{_I} {_ADV}(?!going to (?:move|relocate|quit|leave|start|join|retire|buy|sell|"
        r"adopt|study|learn|switch|marry|get)\b)(?P<v>flying|travell?ing|heading|going|jetting) "
        r"(?:out |over |back )?to (?P<x>.+)",
        _travelling,
    ),
    (
        rf"^(?P<p>the|my|our) (?P<x>[\w' -]{{0,40}}?\b(?:{_EVENT})) (?:is|was|got|has been) "
        r"(?:(?:now|officially|been) )*(?:off|cancell?ed|called off|scrapped)\b",
        _cancelled,
    ),
    # keeping something (not "I keep forgetting", "I keep it short")
    (
        r"^(?P<s>i|we) keep (?!(?:\w+ing|it|that|this|them|on|up|in|out|going|asking)\b)"
        r"(?P<x>.+)",
        fmt("{subject} keeps {x}"),
    ),
)
