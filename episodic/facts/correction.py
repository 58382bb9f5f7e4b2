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
# mixed that up"); the old value is one or two words, ended by the clause, a
# mark or what chat adds after it.
# where the old value ends: the clause's end, a mark, or what chat adds after it
_Y_END = (
    r"(?=$|[,;:.!?(]|\s+(?:lol|haha|lmao|and|but|so|because|bc|as|which|since|everyone|"
    r"sorry|tbh|btw)\b)"
)
_CONTRAST = re.compile(
    r"(?:^|\s)(?P<x>(?-i:[A-Z])[\w.+#-]*(?: (?:(?-i:[A-Z])|\d)[\w.+#-]*)*"
    r"|(?P<low>[^\W\d_][\w.+#-]*)),? not (?:an? |the |my )?(?P<y>[\w.+#-]+(?: [\w.+#-]+)?)"
    rf"{_Y_END}",
    re.I,
)
# what chat puts after it: "i meant square not stripe lol"
_CHAT_END = re.compile(r"(?:\s+(?:lol|haha|lmao|tbh|rn|btw|oops|sorry)[.!]*)+$", re.I)
# a stored value rewritten: a slip corrected, or a plan's choice changed
CORRECTION = re.compile(r"^(?:user|team) (?:corrected|changed) (?P<y>.+?) to (?P<x>.+)$", re.I)
# a version number after the old value goes with it ("Postgres 14")
_VERSION = r"(?:\s+v?\d[\w.]*)?"


# words that are never a value, nor its first word: a pronoun, an article, a
# preposition, a verb of being or saying ("my allergy is to tree nuts, not
# peanuts" reads back "tree nuts"), or what stands beside "not" when it negates
# a verb or a reason ("I have not been", "If not Thursday", "not just because")
_NOT_A_VALUE = frozenset(
    """
    i i'm im we it it's its is are was were be been being am to in at on of for from with
    by a an the my our meant mean said actually really just that this and but so or if
    when whether unless because have has had do does did can could will would should
    must may might only even too yet exactly quite much sure always ever all enough
    necessarily now anymore any every title allergy name called named not no
    """.split()
)


def _no_value(value: str) -> bool:
    """True when `value` starts with a word no value starts with ("May" is a month)."""
    first = value.split()[0].casefold() if value.split() else ""
    return first in _NOT_A_VALUE and not _MONTH.match(value)


_PLACE_WORD = re.compile(r"^(?:at|in|for|with|from|of|on|near|by)$", re.I)
_NOUN_BEFORE = re.compile(r"^(?:to|in|at|of|for|from|with|a|an|the|my|our|is|are)$", re.I)
_MONTH = re.compile(rf"^(?:{MONTHS})$", re.I)
# "it's pistachios I'm allergic to, not cashews": the value is the cleft's focus
_CLEFT = re.compile(
    r"(?:^|[,:;]\s*|\s)(?:it's|its|it is|it was) (?P<x>[\w-]+(?: [\w-]+)?) (?:that |which )?"
    r"(?:i|i'm|im|i am|we|we're)\b[^,]*?,? not (?P<y>[\w.+#-]+(?: [\w.+#-]+)?)"
    rf"{_Y_END}",
    re.I,
)


def contrast(clause: str, *, signal: object = None) -> str | None:
    """The correction fact of an "X, not Y" clause, or None."""
    # (an aside in brackets is a sentence of its own by now: `offline_extract._asides_apart`)
    s = _CHAT_END.sub("", clause.strip().rstrip(" .!"))
    cleft = _CLEFT.search(s)
    if cleft is not None and signal:
        return _corrected(cleft["x"], cleft["y"])
    m = _CONTRAST.search(s)
    if m is None or (m["low"] and not signal):
        return None
    x, y = m["x"].strip(), m["y"].strip()
    if _no_value(x) or _no_value(y):
        return None
    before = s[: m.start("x")].split()
    if not m["low"] and y[:1].islower() and before and _PLACE_WORD.match(before[-1]):
        # "the pastry chef at Ostra Verde, not the sous chef": the name is where;
        # what is contrasted stands before it, ending as the old value ends
        lead = before[:-1][-len(y.split()) :]
        if not lead or lead[-1].casefold() != y.split()[-1].casefold():
            return None
        return _corrected(" ".join(lead), y)
    if m["low"]:
        x = _widened(before, x, y)
        if x is None:
            return None
    return _corrected(x, y)


def _widened(before: list[str], x: str, y: str) -> str | None:
    """A lowercase value with the words that belong to it: as many as the old
    value has when both end alike ("product manager, not project manager"),
    else one content word more ("tree nuts, not peanuts")."""
    if _no_value(x):
        return None
    ys = y.split()
    if len(ys) > 1 and ys[-1].casefold() == x.casefold():
        lead = before[-(len(ys) - 1) :] if len(before) >= len(ys) - 1 else []
        if len(lead) == len(ys) - 1 and not any(_no_value(w) for w in lead):
            return " ".join([*lead, x])
        return None
    # "to tree nuts": a word after a preposition or article is part of the value;
    # "I drink tea": a word after a subject is its verb
    if len(before) >= 2 and _NOUN_BEFORE.match(before[-2]) and not _no_value(before[-1]):
        return f"{before[-1]} {x}"
    return x


def _corrected(x: str, y: str) -> str | None:
    """ "User corrected Y to X", unless the two are one value or X is a day
    or month where Y is none ("it was Monday, not Tuesday" corrects no value;
    "the trip is in June, not May" does)."""
    if normalize(x) == normalize(y) or (_DATE.match(x) and not _DATE.match(y)):
        return None
    if _DATE.match(x) and _DATE.match(y) and not _MONTH.match(x):
        return None
    return f"User corrected {y} to {x}"


# "were doing ljubljana instead of oaxaca": a choice changed; the stored plan
# that names oaxaca is rewritten with ljubljana
_INSTEAD = re.compile(
    r"\b(?:doing|going to|visiting|picked|picking|chose|choosing|going with|went with|booked|"
    r"going for|went for|decided on|settled on) (?:the |an? )?(?P<x>[\w-]+(?: [\w-]+)?) "
    r"instead(?: of)? (?:the |an? )?(?P<y>[\w-]+(?: [\w-]+)?)"
    rf"{_Y_END}",
    re.I,
)


def instead(clause: str) -> str | None:
    """ "User changed Y to X" for a choice said as "X instead of Y", or None."""
    m = _INSTEAD.search(clause)
    if m is None or normalize(m["x"]) == normalize(m["y"]):
        return None
    if _no_value(m["x"]) or _no_value(m["y"]):
        return None
    return f"User changed {m['y']} to {m['x']}"


# "i told u deloitte last time?? i meant kpmg": the slip and the value meant,
# across the turn's sentences
_SAID_MEANT = re.compile(
    r"\b(?:told (?:you|u|ya)|said|wrote|typed|put)(?: (?:it was|it's|its))? "
    r"(?!(?:that|this|it|no|yes|so|the|an?|something|anything|you|u|me)\b)(?P<y>[\w.+#-]{3,})\b"
    r"[^.!?]*[.!?]*\s*(?:(?:sorry|oops|lol|haha|wait|no)[,!.]?\s+)*"
    # "i said juniper last time, juniper is my neighbors dog, mine is figaro"
    r"(?:i meant|meant|mine(?:'s| is)|(?:it's|its|it is) actually) (?P<x>[\w.+#-]{2,})",
    re.I,
)


# "i said tuesday but my surgery is actually thursday": the slip, then the truth
# "i keep saying heidelberg bc thats where the office is but my apartment is
# actually in mannheim": the reason between them is skipped
_SAID_BUT = re.compile(
    r"\bi (?:said|keep saying|kept saying|told (?:you|u|ya)|wrote) (?P<y>[\w.+#-]{3,})"
    r"(?: [^.!?]{0,60}?)? but (?:it's|it is|its|"
    r"(?:my|our|the) [\w' -]{1,30}? (?:is|are)) (?:actually|really) (?:(?:in|at|on) )?"
    r"(?P<x>[\w.+#-]{2,})",
    re.I,
)
# "I told you I live in Aarhus, but actually I live in Odense": the same words
# twice, but for the value
_TOLD_BUT = re.compile(
    r"\bi(?:'ve| have| had)? (?:just |already )?(?:told (?:you|u|ya)|said|wrote|mentioned)"
    r"(?: that)? (?P<a>[^,.;:!?]{3,60}?),? but "
    r"(?:(?:actually|in fact|really),? )?(?P<b>[^,.;:!?]{3,60})",
    re.I,
)
# who else may have said it: a slip they made is no value of the user's
_SOMEONE_ELSE = re.compile(
    r"\b(?:he|she|they|we|it|who|(?:my|our|his|her|their) [\w-]+|[\w-]+'s [\w-]+)\s*$", re.I
)
_FILLER = frozenset({"actually", "really"})


def _parallel(a: str, b: str) -> tuple[str, str] | None:
    """(old, new): the words where two parallel clauses differ, when they
    share at least two words around a difference of one to three words."""
    xs = a.split()
    ys = [w for w in b.split() if w.casefold() not in _FILLER]
    pre = 0
    while pre < min(len(xs), len(ys)) and xs[pre].casefold() == ys[pre].casefold():
        pre += 1
    post = 0
    while (
        post < min(len(xs), len(ys)) - pre and xs[-1 - post].casefold() == ys[-1 - post].casefold()
    ):
        post += 1
    old, new = xs[pre : len(xs) - post], ys[pre : len(ys) - post]
    if pre + post < 2 or not 1 <= len(old) <= 3 or not 1 <= len(new) <= 3:
        return None
    return " ".join(old), " ".join(new)


def said_instead(text: str) -> str | None:
    """The correction fact of a turn that names a value said and the one meant, or None."""
    m = _SAID_MEANT.search(text) or _SAID_BUT.search(text)
    if m is not None and _SOMEONE_ELSE.search(text[: m.start()]):
        m = None  # "my sister said paris ... it's actually lyon": her slip, not a stored fact
    if m is not None and normalize(m["x"]) != normalize(m["y"]):
        return f"User corrected {m['y'].rstrip('.')} to {m['x'].rstrip('.')}"
    told = _TOLD_BUT.search(text)
    pair = _parallel(told["a"], told["b"]) if told else None
    return f"User corrected {pair[0]} to {pair[1]}" if pair else None


def corrected_fact(new_text: str, old_text: str) -> str | None:
    """`old_text` with the value a correction fact names replaced, or None
    when `new_text` is no correction or `old_text` does not hold the old value."""
    m = CORRECTION.match(new_text)
    if m is None:
        return None
    version = _VERSION if re.search(r"\d", m["x"]) else ""
    old = re.compile(rf"\b{re.escape(m['y'])}{version}(?![\w-])", re.I)
    found = old.search(old_text)
    if found is None:
        return None
    head = old_text[: found.start()]
    # "a data analyst" corrected to "actuarial analyst" reads "an actuarial analyst"
    article = re.search(r"\b(an?) $", head)
    if article:
        vowel = m["x"][:1].casefold() in "aeiou"
        head = head[: article.start()] + ("an " if vowel else "a ")
    return head + m["x"] + old_text[found.end() :]
