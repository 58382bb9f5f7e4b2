"""Does a new fact end or negate an active one?

`is_negation_of(new, old)` is true when `new` carries an ending marker and
what it ends is what `old` states. Markers (on the casefolded text):

- "no longer X", "not X anymore", "don't / doesn't X anymore", "no more X",
  "does not X", "used to X"
- the ending verbs of `endings` ("stopped X", "quit X", "cancelled X",
  "sold X", "left X", "moved out of X", "broke up with X", "divorced X" ...)
- "X died", "X passed away", "X is dead", "X was put down"
- "forget that X" (an explicit request to drop a fact)

What is ended: the content words of `new` once the marker, the subject,
pronouns, time words and the everyday verbs (live, use, have, work ...) are
removed; if only verbs remain ("no longer smokes"), the verbs. The match
needs one of those words (crudely stemmed) in `old`, and `old` must not be
a negation itself ("User no longer smokes" is not ended by "User stopped
smoking": both say the same). A stem of five letters or more also meets the
longer stems it starts ("diabetes" ends "is type 1 diabetic").
"""

from __future__ import annotations

import re

from episodic.facts.endings import ENDING_VERBS, ENDING_WORDS
from episodic.facts.normalize import stem, words
from episodic.facts.when import WEEKDAYS

_MARKERS = re.compile(
    r"n't\b.*\banymore\b|\b(?:no longer|used to|does not|doesn't|"
    r"not\b.*\banymore|not any ?more|no more|"
    rf"{ENDING_VERBS}|died|passed away|is dead|was put down|forget that|asked to forget)\b"
    # "User is not allergic to penicillin", "User is not a vet": a state denied
    # (not "User is not sure about Berlin", which ends nothing)
    r"|^(?:user|team) (?:is|are) not (?:allergic|(?:lactose|gluten) intolerant|vegan|"
    r"vegetarian|pescatarian|diabetic|an? )"
)
_STOP = (
    frozenset(
        """
    user user's users team team's i i'm me my mine we we're our us they their them
    he his him she her it its the a an this that these those is am are was were be been
    in at of to for on with from by and or but so as about into out
    last week weeks month months year years day days ago yesterday today recently just
    now already anymore any more longer no not don't doesn't didn't never
    stopped quit gave give up left retired moved sold away got rid died passed dead
    put down cancelled canceled dropped forget does used asked wants
    where what who when how which thing things stuff mentioned said told
    morning afternoon evening night weekend tonight tomorrow
    """.split()
        + WEEKDAYS.split("|")
    )
    | ENDING_WORDS
)
_VERBS = frozenset(
    stem(w)
    for w in """
    live lives living lived use uses using used have has having had own owns owned
    work works working worked like likes liked love loves loved prefer prefers
    preferred enjoy enjoys go goes going went do does doing did drive drives
    eat eats play plays drink drinks take takes named called
    """.split()
)


# the shortest stem that may stand for a longer one ("diabet" for "diabetic")
_MIN_PREFIX = 5

# the fact a "forget that ..." request becomes (offline_rules); it ends what it
# names and is never kept as a fact of its own
FORGET_REQUEST = re.compile(r"^(?:user|team) asked to forget\b", re.I)


def is_ending(text: str) -> bool:
    """True when `text` carries an ending marker ("no longer ...", "sold ...")."""
    return _MARKERS.search(text.casefold().replace("\u2019", "'")) is not None


def _content(text: str) -> tuple[set[str], set[str]]:
    """(object stems, verb stems) of a text, stop words removed."""
    stems = {stem(w) for w in words(text) if w not in _STOP}
    return stems - _VERBS, stems & _VERBS


def is_negation_of(new_text: str, old_text: str) -> bool:
    """True when `new_text` explicitly ends or negates what `old_text` states."""
    if not is_ending(new_text) or is_ending(old_text):
        return False
    new_objects, new_verbs = _content(new_text)
    old_objects, old_verbs = _content(old_text)
    if new_objects:
        return _shared(new_objects, old_objects)
    return bool(new_verbs & old_verbs)


def _shared(a: set[str], b: set[str]) -> bool:
    """A stem in both, or one long stem the start of another: the crude stemmer
    leaves "diabetes" and "diabetic", "allergy" and "allergic" apart."""
    if a & b:
        return True
    return any(
        len(short) >= _MIN_PREFIX and long.startswith(short)
        for x in a
        for y in b
        for short, long in (sorted((x, y), key=len),)
    )
