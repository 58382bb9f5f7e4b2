"""A correction of the fact just stated: "Sorry, actually it's Klara with a K."

The clause names no slot; it gives a new value for the last fact the user
stated in the episode, whose value is its last name or number ("Clara" in
"User's sister's name is Clara"). It counts as a correction only when it says so: a
signal first ("sorry", "actually", "oops", "no", "wait") before "it's X" /
"that's X", or a verb of correcting itself ("I meant X", "make that X").
The new value must look like a value (a name or a number: "actually it's
fine" corrects nothing; a date is no value: "no, it's Tuesday"), of the
old value's kind (a number for a number), and "X, not Y" must name the old
value as Y.
"""

from __future__ import annotations

import re

from episodic.facts.normalize import normalize
from episodic.facts.when import MONTHS, RELATIVE_DATE

_SIGNAL = re.compile(
    r"^(?:(?:sorry|oops|whoops|no|nope|wait|actually|correction|my bad|my mistake|err|um|"
    r"sorry about that|scratch that)[,:!.]?\s+)+",
    re.I,
)
_SELF_CORRECTING = r"i meant|i mean|make that|that should be|it should be|should be"
_RESTATE = re.compile(
    rf"^(?:(?P<own>{_SELF_CORRECTING})|it's|it is|its|that's|that is) (?P<x>.+?)"
    r"(?:,? not (?P<y>[^,]+?))?$",
    re.I,
)
# a fact's value as the extractor writes it: a name (its words capitalised) or a number
_NAMED = re.compile(r"\b(?:[A-Z][\w'-]*(?:\.?\s+[A-Z][\w'-]*)*|\d+)\b")
# "no, it's Tuesday" answers a question about time; it corrects no value
_DATE = re.compile(rf"^(?:{RELATIVE_DATE}|{MONTHS})$", re.I)
# what trails the value ("Klara with a K", "Dallas, sorry")
_VALUE_END = re.compile(r"\s+(?:with|since|because|but|and|as|please|thanks|sorry)\b.*$|,.*$", re.I)


def corrected_value(clause: str) -> tuple[str, str | None] | None:
    """(new value, old value it names or None) when `clause` corrects the last fact."""
    s = clause.strip().replace("\u2019", "'").rstrip(" .!")
    signal = _SIGNAL.match(s)
    rest = s[signal.end() :] if signal else s
    m = _RESTATE.match(rest)
    if m is None or (signal is None and m["own"] is None):
        return None
    value = _VALUE_END.sub("", m["x"]).strip()
    if not value or not (value[0].isupper() or value[0].isdigit()) or _DATE.match(value):
        return None
    return value, m["y"]


def apply_correction(fact: str, value: str, named_old: str | None) -> str | None:
    """`fact` with its value (its last name or number) replaced by `value`, or
    None when it has none (or "not Y" names another one)."""
    found = [m for m in _NAMED.finditer(fact) if m.start() > 0]
    if not found:
        return None
    last = found[-1]
    if normalize(last.group(0)) == normalize(value) or last[0].isdigit() != value[0].isdigit():
        return None
    if named_old is not None and normalize(named_old) != normalize(last.group(0)):
        return None
    return f"{fact[: last.start()]}{value}{fact[last.end() :]}"


# --- a correction of a stored fact, said in a later episode -----------------
# "she lives in Yerevan, not Tbilisi", "it's actually MariaDB 10.6, not postgres":
# no fact of this episode holds Tbilisi, so the clause becomes "User corrected
# Tbilisi to Yerevan", and the merge rewrites the stored fact that names it
# (`corrected_fact`). The new value is a name (capitalised, numbers may
# follow), or any single word when the turn owns up to a slip ("sorry", "I
# mixed that up"); the old value is one or two words ending the clause.
_CONTRAST = re.compile(
    r"(?:^|\s)(?P<x>(?-i:[A-Z])[\w.+#-]*(?: (?:(?-i:[A-Z])|\d)[\w.+#-]*)*"
    r"|(?P<low>[^\W\d_][\w.+#-]*)),? not (?P<y>[\w.+#-]+(?: [\w.+#-]+)?)$",
    re.I,
)
# what chat puts after it: "i meant square not stripe lol"
_CHAT_END = re.compile(r"(?:\s+(?:lol|haha|lmao|tbh|rn|btw|oops|sorry)[.!]*)+$", re.I)
CORRECTION = re.compile(r"^(?:user|team) corrected (?P<y>.+?) to (?P<x>.+)$", re.I)
# a version number after the old value goes with it ("Postgres 14")
_VERSION = r"(?:\s+v?\d[\w.]*)?"


def contrast(clause: str, *, signal: object = None) -> str | None:
    """The correction fact of an "X, not Y" clause, or None."""
    m = _CONTRAST.search(_CHAT_END.sub("", clause.strip().rstrip(" .!")))
    if m is None or (m["low"] and not signal):
        return None
    x, y = m["x"].strip(), m["y"].strip()
    if normalize(x) == normalize(y) or _DATE.match(x):
        return None
    return f"User corrected {y} to {x}"


# "i told u deloitte last time?? i meant kpmg": the slip and the value meant,
# across the turn's sentences
_SAID_MEANT = re.compile(
    r"\b(?:told (?:you|u|ya)|said|wrote|typed|put)(?: (?:it was|it's|its))? "
    r"(?!(?:that|this|it|no|yes|so|the|an?|something|anything|you|u|me)\b)(?P<y>[\w.+#-]{3,})\b"
    r"[^.!?]*[.!?]*\s*(?:(?:sorry|oops|lol|haha|wait|no)[,!.]?\s+)*i meant (?P<x>[\w.+#-]{2,})",
    re.I,
)


# "i said tuesday but my surgery is actually thursday": the slip, then the truth
_SAID_BUT = re.compile(
    r"\bi (?:said|told (?:you|u|ya)|wrote) (?P<y>[\w.+#-]{3,}) but (?:it's|it is|its|"
    r"(?:my|our|the) [\w' -]{1,30}? (?:is|are)) (?:actually|really) (?P<x>[\w.+#-]{2,})",
    re.I,
)


def said_instead(text: str) -> str | None:
    """The correction fact of a turn that names a value said and the one meant, or None."""
    m = _SAID_MEANT.search(text) or _SAID_BUT.search(text)
    if m is None or normalize(m["x"]) == normalize(m["y"]):
        return None
    return f"User corrected {m['y']} to {m['x']}"


def corrected_fact(new_text: str, old_text: str) -> str | None:
    """`old_text` with the value a correction fact names replaced, or None
    when `new_text` is no correction or `old_text` does not hold the old value."""
    m = CORRECTION.match(new_text)
    if m is None:
        return None
    version = _VERSION if re.search(r"\d", m["x"]) else ""
    old = re.compile(rf"\b{re.escape(m['y'])}{version}(?![\w-])", re.I)
    if old.search(old_text) is None:
        return None
    return old.sub(m["x"], old_text, count=1)
