"""Does a new fact replace an active one it does not share a slot with?

Two ways a user says "this instead of that":

- naming the old value: "X instead of Y", "X rather than Y", "X in place of
  Y", "prefers X over Y", "switched from Y to X", "replaced Y with X",
  "rescheduled Y to X" (only a plan: a trip, a visit, an appointment). The
  new fact replaces a fact that states Y (its content words all in it);
- marking a preference as a change without naming what it changes: "I now
  prefer tea", "these days I prefer X", "I've switched to X". It replaces the one positive
  preference ("prefers ...") of the same subject among the candidates, and
  nothing when there are several: which one it changes is then a guess.

Neither replaces a fact that is itself an ending ("no longer uses Y").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from episodic.facts.negation import is_ending
from episodic.facts.normalize import stem, words
from episodic.facts.slots import parse_slot
from episodic.facts.when import MONTHS, SEASONS, WEEKDAYS

_NAMED_OLD = re.compile(
    r"\b(?:instead of|rather than|in place of) (?P<a>.+?)(?=$|[,;]| (?:now|these days|for|since)\b)"
    r"|\bprefers? .+? over (?P<b>.+?)(?=$|[,;]| (?:now|these days|for|since)\b)"
    r"|\b(?:switched|moved|migrated|changed) (?:over )?from (?P<c>.+?) to\b"
    r"|\b(?:replaced|swapped) (?P<d>.+?) (?:with|for)\b"
    r"|\brescheduled (?P<e>.+?) to\b",
    re.I,
)
# what a plan moved in time replaces: the plan, never a fact of another kind
# ("rescheduled the dentist to friday" leaves "User's dentist is Dr. Lee")
_RESCHEDULED = re.compile(r"^(?:user|team) rescheduled\b", re.I)
_PLAN = re.compile(
    r"\b(?:planning|travelling|traveling|going to|trip|visit|booked|scheduled|appointment|"
    r"is on|are on)\b",
    re.I,
)
_CHANGED_PREFERENCE = re.compile(
    r"^(?:user|team) (?:(?:now|these days|nowadays) prefers (?!to\b)|switched to )", re.I
)
_PREFERENCE = re.compile(r"^(?:user|team)(?: \w+)* prefers (?!to\b)", re.I)
_NOISE = frozenset({"the", "a", "an", "their", "my", "our", "them", "it"})


_MOVED_TO = re.compile(r"^(?:user|team) rescheduled .+? to (?P<x>.+)$", re.I)
_TIME_PHRASE = re.compile(
    rf"\b(?:in|on|for|this|next) (?:early |late |mid-?)?(?P<t>{MONTHS}|{WEEKDAYS}|{SEASONS})\b",
    re.I,
)


def rescheduled_fact(new_text: str, old_text: str) -> str | None:
    """The plan `old_text` moved to the time `new_text` names ("a trip to japan in
    april" -> "in october"), or None when it is no such pair."""
    m = _MOVED_TO.match(new_text)
    when = _TIME_PHRASE.search(old_text)
    if m is None or when is None or not _PLAN.search(old_text):
        return None
    x = m["x"].strip()
    on = re.match(rf"(?:{WEEKDAYS})\b", x, re.I)
    return f"{old_text[: when.start()]}{'on' if on else 'in'} {x}{old_text[when.end() :]}"


def replaced_value(text: str) -> str | None:
    """The old value a fact says it replaces ("Slack" in "uses Teams instead of Slack")."""
    m = _NAMED_OLD.search(text)
    if m is None:
        return None
    return next(v for v in m.groups() if v is not None)


def _stems(text: str) -> set[str]:
    return {stem(w) for w in words(text) if w not in _NOISE}


def names_replaced(new_text: str, old_text: str) -> bool:
    """True when `new_text` names the value `old_text` states as the one it replaces."""
    old_value = replaced_value(new_text)
    if old_value is None or is_ending(old_text):
        return False
    if _RESCHEDULED.match(new_text) and not _PLAN.search(old_text):
        return False
    wanted = _stems(old_value)
    return bool(wanted) and wanted <= _stems(old_text)


# "switched to regular whole milk" replaces "uses oat milk": a thing of the
# same kind (the same last word) used, drunk or eaten before
_SWITCHED_TO = re.compile(
    r"^(?:user|team) (?:switched to|(?:now|these days|nowadays) prefers) (?P<x>.+)$", re.I
)
_USED = re.compile(
    r"^(?:user|team) (?:uses|drinks|eats|takes|drives|rides|plays|reads|prefers|books|orders|"
    r"buys|wears) (?P<y>.+)$",
    re.I,
)


def _same_kind(new_text: str, old_text: str) -> bool:
    new, old = _SWITCHED_TO.match(new_text), _USED.match(old_text)
    if new is None or old is None:
        return False
    xs, ys = words(new["x"]), words(old["y"])
    return bool(xs and ys) and stem(xs[-1]) == stem(ys[-1]) and _stems(new["x"]) != _stems(old["y"])


def changes_preference(new_text: str, old_text: str) -> bool:
    """True when `new_text` is a preference marked as changed ("now prefers X")
    and `old_text` a positive preference of the same subject for something else,
    or a switch to a thing of the kind `old_text` uses ("whole milk", "oat milk")."""
    if _same_kind(new_text, old_text):
        return True
    if not _CHANGED_PREFERENCE.match(new_text) or not _PREFERENCE.match(old_text):
        return False
    new, old = parse_slot(new_text), parse_slot(old_text)
    if new is None or old is None or new.slot.subject != old.slot.subject:
        return False
    return new.slot != old.slot


def replaced_candidate(new_text: str, candidates: Sequence[str]) -> int | None:
    """The index of the candidate `new_text` replaces, or None."""
    for i, text in enumerate(candidates):
        if names_replaced(new_text, text):
            return i
    changed = [i for i, text in enumerate(candidates) if changes_preference(new_text, text)]
    kinds = [i for i in changed if _same_kind(new_text, candidates[i])]
    if len(kinds) == 1:
        return kinds[0]
    preferences = [i for i, text in enumerate(candidates) if _PREFERENCE.match(text)]
    return changed[0] if len(changed) == 1 and len(preferences) == 1 else None
