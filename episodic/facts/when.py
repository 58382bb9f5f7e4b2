"""Relative dates ("this Monday", "yesterday", "two weeks ago") in a clause.

A relative date means something only beside the turn that said it, and the
fact keeps that turn's time as its `valid_from`. So a state a fact states
("works at Orbital Labs") must not carry the date of the event it came from
("I started at Orbital Labs this Monday"): the date is cut from it. Event
facts ("moved to Berlin last month", "Rex died last week") keep theirs.
"""

from __future__ import annotations

import re

WEEKDAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
MONTHS = r"january|february|march|april|may|june|july|august|september|october|november|december"
SEASONS = r"spring|summer|autumn|fall|winter"
_UNITS = rf"morning|afternoon|evening|night|week|weekend|month|year|{SEASONS}"
_COUNT = r"a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|several|\d+"
RELATIVE_DATE = (
    r"(?:(?:on|by|since|until|from|as of) )?(?:"
    rf"(?:(?:this|last|next|past|coming) )?(?:{WEEKDAYS})"
    # "on tues", "last fri": the short forms chat uses, only after a preposition
    r"|(?:on|last|this|next) (?:mon|tues?|wed|weds|thur?s?|fri|sat|sun)\b"
    rf"|(?:this|last|next|past|coming) (?:{_UNITS})"
    rf"|(?:{_COUNT}) (?:days?|weeks?|months?|years?) ago"
    r"|(?:earlier |later )?(?:yesterday|today|tonight|tomorrow)(?: (?:morning|afternoon|evening|"
    r"night))?|the other day|just now|earlier this (?:week|month|year))"
)
_TRAILING = re.compile(rf"(?:,?\s+(?:{RELATIVE_DATE}))+\s*$", re.I)
# facts stating a state rather than an event ("User works at X", "Team uses X")
_STATE = re.compile(
    r"^(?:user|team)(?:'s [\w' -]+?)? (?:lives|works|uses|has|owns|is|are|likes|loves|"
    r"prefers|dislikes)\b",
    re.I,
)


def without_trailing_date(fact: str) -> str:
    """`fact` without the relative date it ends with, if it states a state."""
    if not _STATE.match(fact):
        return fact
    cut = _TRAILING.sub("", fact).rstrip(" ,")
    # "User's acl surgery is on tuesday": the date is what the fact says
    return fact if re.search(r"\b(?:is|are|was|were)$", cut, re.I) else cut
