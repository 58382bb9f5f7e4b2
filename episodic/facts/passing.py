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

from episodic.facts.indirect import DWELLING, HOME_PART, HOUSEHOLD
from episodic.facts.jobs import JOB
from episodic.facts.negation import is_ending
from episodic.facts.offline_rules import NOT_A_PLACE, PETS, RELATIONS, SPORT
from episodic.facts.slots import DEVICE_WORD, TOOL_WORD
from episodic.facts.when import WEEKDAYS

# a tool's trouble told by its user: "VS Code keeps freezing when I open ..."
_TOOL_TROUBLE = re.compile(
    rf"^(?:(?:ugh|argh|so|ok|okay|hey|help)[,!.]? )*(?P<t>{TOOL_WORD}) (?:keeps|kept|won't|wont|"
    r"doesn't|doesnt|isn't|isnt|is so|is being|is super|crashed|crashes|freezes|froze|hangs|"
    r"lags|just crashed|stopped)\b",
    re.I,
)
# "long-time ynab user here": a tool by its user
_TOOL_USER = re.compile(
    r"\b(?:long-?time|daily|avid|heavy|happy|loyal|lifelong|die-hard) (?P<t>[\w.+#-]+) user\b", re.I
)
# a sport done on a schedule: "my forearms are wrecked from bouldering every tuesday"
_SPORT_HABIT = re.compile(
    rf"\b(?P<x>{SPORT}) (?P<t>(?:every|each) (?:{WEEKDAYS}|morning|evening|weekend|day|week|"
    rf"night)|(?:once|twice|three times) a week|on (?:{WEEKDAYS})s)\b",
    re.I,
)
_SCHEDULED = re.compile(r"\b(?:every|each|a week)\b|days\b", re.I)
# someone else in the sentence before it: the habit may be theirs
_SOMEONE_ELSE = re.compile(rf"\b(?:he|she|they|his|her|their|[Mm]y (?:{RELATIONS}))\b", re.I)
_PLAYED = re.compile(r"tennis|football|basketball|volleyball|badminton|squash|padel", re.I)
# a device of the user's, named lowercase or not: "my pixel 6 battery is dead"
_MY_DEVICE = re.compile(
    rf"\b[Mm]y (?P<x>(?:(?:19|20)\d\d )?(?:{DEVICE_WORD})"
    r"(?: (?:pro|max|air|mini|plus|ultra|\d+[a-z]?))*)\b",
    re.I,
)
# what a question just named, owned up to: "a day trip from Leeds? that's where I
# live", "the oil on a 2015 honda civic? that's what i drive"
_THATS_WHERE = re.compile(
    r"^(?:that's|thats|which is|that is) where (?:i|we) (?:live|'m based|am based|are based)\b",
    re.I,
)
_PLACE_NAMED = re.compile(
    r"\b(?:from|in|to|near|around|of) (?P<x>(?-i:[A-Z])[\w-]+(?: (?-i:[A-Z])[\w-]+)?)"
)
_THATS_WHAT = re.compile(
    r"^(?:that's|thats|which is|that is) what (?:i|we) (?P<v>drive|ride|have|own)\b", re.I
)
_THING_NAMED = re.compile(
    r"\b(?:an?|my|the) (?P<x>(?:(?:19|20)\d\d )?[\w-]+(?: [\w-]+){0,2}?)\s*\?", re.I
)
# "... in vim? it's my main editor": the tool the turn just named
_ITS_MY_TOOL = re.compile(
    r"\bit(?:'s| is) (?:my|our) (?:main|primary|daily|go-to|usual|default|only|favou?rite) "
    r"(?:editor|ide|browser|terminal|shell|language|database|db|os|distro|stack|tool)\b",
    re.I,
)
# "our flat in Tartu has no balcony", "my balcony in Ghent", "me and my flatmate
# in leith", "our building here in Rotterdam": the home is where they live
_MY_HOME_IN = re.compile(
    rf"\b(?:[Mm]y|[Oo]ur) (?:new |little |tiny |old |small )?(?:{DWELLING}|{HOME_PART}) "
    r"(?:here )?in (?P<x>(?-i:[A-Z])[\w-]+(?: (?-i:[A-Z])[\w-]+)?)"
    rf"|\b[Mm]y (?:{HOUSEHOLD}) in (?P<low>(?!(?:{NOT_A_PLACE})\b)(?-i:[a-z]{{3,}}))\b"
    r"|\b(?:from|at|live|living|building|street) here in (?P<here>(?-i:[A-Z])[\w-]+)"
)
# makes of vehicle a model year comes with ("my 2019 tax return" is no vehicle)
_MAKES = (
    r"skoda|honda|toyota|ford|vw|volkswagen|bmw|audi|mercedes|tesla|nissan|mazda|subaru|kia|"
    r"hyundai|renault|peugeot|fiat|volvo|jeep|chevy|chevrolet|dodge|mini|vauxhall|citroen|seat|"
    r"lexus|porsche|mitsubishi|suzuki|yamaha|kawasaki|ducati|harley|vespa|trek|specialized|"
    r"giant|cannondale|brompton|polestar|rivian|dacia|opel|jaguar|land rover|range rover"
)
# "my 2016 skoda octavia estate": a vehicle named with its model year is the user's
_MY_MODEL_YEAR = re.compile(
    rf"\b[Mm]y (?P<x>(?:19|20)\d\d (?:{_MAKES})\b(?: (?!(?:when|for|to|with|is|was|has|had|and|"
    r"but|that|which|because|if|so|in|on|at|keeps|kept|won't|wont|doesn't|doesnt|isn't|isnt|"
    r"broke|needs|died|stopped|just|battery|screen|engine|tyres?|tires?|brakes?)\b)[a-z][\w-]*)"
    r"{0,2})",
    re.I,
)
_GOT_RID = re.compile(
    r"\b(?:sold|gave away|got rid of|replaced|traded in|returned|ditched)\b", re.I
)
_NAMED = re.compile(
    rf"\b[Mm]y (?P<a>{RELATIONS}) (?P<n>(?-i:[A-Z])[a-z][\w-]+)\b"
    r"(?: and (?P<n2>(?-i:[A-Z])[a-z][\w-]+)\b)?"
)
# a name set off by commas: "my boyfriend, Tobias; he ...", "My wife, Ingrid, is a vet"
_NAMED_APART = re.compile(
    rf"\b[Mm]y (?P<a>{RELATIONS}), (?P<n>(?-i:[A-Z])[a-z][\w-]+)(?=[,;:)(.!?]|$)"
)
_A_RELATION = re.compile(rf"^(?:{RELATIONS})$", re.I)
# a lowercase name, as chat writes one, only where a verb of its own follows it
# ("my roommate jake leaves dishes", "my cat miso hasnt eaten"), and never a
# word that makes a compound with the relation ("my dog walker is", "my mom always")
_NAMED_LOWER = re.compile(
    rf"\b[Mm]y (?P<a>{RELATIONS}) (?P<n>(?-i:[a-z]{{3,}}))(?= (?:is|was|has|hasnt|hasn't|had|"
    r"keeps|kept|wont|won't|cant|can't|doesnt|doesn't|didnt|didn't|isnt|isn't|wasnt|wasn't|"
    r"leaves|left|loves|hates|wants|needs|says|said|thinks|told|tells|asked|asks|works|lives|"
    r"passed|died|turned|hit|got|gets|just|still|always|never|and i|and me|ate|eats|bit|bites|"
    r"chewed|chews|ran|runs|threw|scratched|scratches|screams|barks|meows|escaped|swallowed|"
    r"learned|learnt|started|stopped|jumped|pees|peed|sleeps|slept)\b"
    # "for my boyfriend teodor, he's into vinyl": a lowercase word closed by a comma
    r"|,)"
)
_NOT_A_NAME = re.compile(
    r"^(?:\w+ly|always|never|just|still|also|even|only|now|then|too|and|or|but|who|which|"
    r"today|tonight|tomorrow|yesterday|lol|haha|btw|tbh|here|there|again|though|tho|ok|okay|"
    r"please|pls|thanks|so|as|etc|first|last|next|once|twice|anyway|either|anymore|neither|"
    r"instead|otherwise|maybe|perhaps|right|yet|though|all|both|home|back|"
    r"that|this|says|said|food|sitter|walker|bed|tree|toys?|litter|box|door|flap|hair|fur|vet|"
    r"insurance|carrier|crate|bowl|collar|lead|leash|park|groomer|trainer|house|kennel|treats|"
    r"meds|owner|side|group|chat|family|friends?|circle|life|job|work|boss|car|place|room|"
    r"time|stuff|thing|things|kids?|baby|wedding|birthday|party|name|age|phone|account|"
    r"team|company|office|dad|mom|mum|sister|brother|son|daughter|wife|husband|cousin|aunt|"
    r"uncle|grandma|grandpa|niece|nephew|best|new|old|little|big|older|younger|ex|late|"
    r"situation|issue|problem|drama|news|health|history|schedule|plans?|trip|visit|call|text|"
    r"message|advice|opinion|story|status|anniversary|funeral|surgery|condition|gift|card|"
    # a verb where the name would be: "my parents were just ..."
    r"were|are|was|is|am|be|been|have|had|has|will|would|can|could|did|does|should|might|"
    r"must|may|got|went|came|made|took|gave|love|loved|like|liked|live|lived|work|worked)$"
)
# up to two words before the kind ("a retired racing greyhound"), never an
# owner's ("my sister's dog", "my friend's cat" are theirs)
_PET_KIND = re.compile(
    rf"\b(?:an?|my|our)(?: (?![\w-]*'s\b)(?!(?:{RELATIONS})\b)[\w-]+){{0,2}}? "
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
    r"\bmy (?:(?:day|full-time|part-time|main|real|current|paid|freelance|new) )?"
    rf"(?:job|career|work|role|position) as (?P<a>an? )?(?P<x>[\w -]*?\b(?:{JOB}))s?\b",
    re.I,
)
_MY_TOOL = re.compile(
    rf"\b(?P<p>my|our) (?P<t>{TOOL_WORD})|\bfor (?P<u>{TOOL_WORD}) (?:dev|development|work|"
    r"projects?|code|coding|programming|stuff)\b",
    re.I,
)
# a sentence about a change: a tool in it is not simply in use
_CHANGE = re.compile(
    r"\b(?:switch|migrat|mov(?:e|ed|ing) (?:from|off|out)|used to|old|former)", re.I
)
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
    lower = (m for m in _NAMED_LOWER.finditer(sentence) if not _NOT_A_NAME.match(m["n"]))
    apart = (m for m in _NAMED_APART.finditer(sentence) if not _A_RELATION.match(m["n"]))
    for m in (*_NAMED.finditer(sentence), *apart, *lower):
        a, n = m["a"].lower(), m["n"][0].upper() + m["n"][1:]
        if m.groupdict().get("n2"):
            out.append(f"User's {a} are {n} and {m['n2']}")
        else:
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
    out = [f"User uses {m['t']}" for m in _TOOL_TROUBLE.finditer(sentence.strip())]
    if " user" in sentence.casefold():  # the scan is costly; the word is rare
        out += [f"User uses {m['t']}" for m in _TOOL_USER.finditer(sentence)]
    for m in _MY_TOOL.finditer(sentence):
        owner = "Team" if (m["p"] or "").lower() == "our" else "User"
        out.append(f"{owner} uses {m['t'] or m['u']}")
    return out


def _a(word: str) -> str:
    return "an" if word[0].lower() in "aeiou" else "a"


def _changed(sentence: str) -> bool:
    return bool(_CHANGE.search(sentence) or _GOT_RID.search(sentence))


# "just my e-bike and the bus": a vehicle of one's own
_MY_VEHICLE = re.compile(
    r"\b[Mm]y (?:new |old |trusty |own )?(?P<x>e-?bike|bike|bicycle|car|motorbike|motorcycle|"
    r"scooter|campervan|van)\b(?! (?:insurance|loan|payments?|seat|keys|park|rack|lock|shop|"
    r"mechanic|ride|trip|journey)\b)"
)


def _devices(sentence: str) -> list[str]:
    things = [m["x"] for m in (*_MY_DEVICE.finditer(sentence), *_MY_VEHICLE.finditer(sentence))]
    if re.search(r"\b(?:19|20)\d\d\b", sentence):
        things += [
            m["x"]
            for m in _MY_MODEL_YEAR.finditer(sentence)
            if not _MY_DEVICE.match(f"my {m['x']}")
        ]
    # a dead battery is no ending; a device sold or replaced is no longer had
    return [f"User has {_a(x)} {x}" for x in things] if things and not _changed(sentence) else []


def _homes(sentence: str) -> list[str]:
    found = list(_MY_HOME_IN.finditer(sentence))
    # "from here in Hobart" is where they are now, whoever else moved
    here = [f"User lives in {m['here']}" for m in found if m["here"]]
    homes = [f"User lives in {m['x'] or m['low']}" for m in found if not m["here"]]
    return here + (homes if not _changed(sentence) else [])


def _owned_up(sentence: str, said: str) -> list[str]:
    """What the sentence before named, claimed by "that's where I live" and the like."""
    s = sentence.strip()
    if _THATS_WHERE.match(s) and (places := list(_PLACE_NAMED.finditer(said))):
        return [f"User lives in {places[-1]['x']}"]
    if (m := _THATS_WHAT.match(s)) and (things := list(_THING_NAMED.finditer(said))):
        verb = {"have": "has", "own": "owns"}.get(m["v"].lower(), m["v"].lower() + "s")
        return [f"User {verb} a {things[-1]['x']}"]
    if _ITS_MY_TOOL.search(s) and (tools := re.findall(TOOL_WORD, f"{said} {s}", re.I)):
        return [f"User uses {tools[-1]}"]
    return []


def _habits(sentence: str) -> list[str]:
    out: list[str] = []
    if not _SCHEDULED.search(sentence):  # the sports' scan is costly; a schedule is rare
        return out
    for m in _SPORT_HABIT.finditer(sentence):
        if _SOMEONE_ELSE.search(sentence[: m.start()]):
            continue
        x = m["x"].lower()
        verb = "goes" if x.endswith("ing") else "plays" if _PLAYED.fullmatch(x) else "does"
        out.append(f"User {verb} {x} {m['t'].lower()}")
    return out


def _brands(sentence: str) -> list[str]:
    out = []
    for m in _MY_BRAND.finditer(sentence):
        x = m["x"]
        if not _NOT_A_BRAND.match(x) and not re.fullmatch(TOOL_WORD, x, re.I):
            out.append(f"User has {_a(x)} {x}")
    return out


def in_passing(sentence: str, said: str, facts: Sequence[str]) -> list[str]:
    """The facts `sentence` mentions in passing that none of `facts` (the turn's
    so far) holds already; `said` is the turn's text before the sentence. A
    name already held is held; anything else must be held in the same words."""
    # what is the user's says "my" or "our": most sentences skip those scans
    mine = re.search(r"\b(?:my|our|here in)\b", sentence, re.I) is not None
    names = [*(_named(sentence) if mine else ()), *_mine_named(sentence, said)]
    owned = _owned_up(sentence, said)
    found = [
        *((f, f.split(" ")[-1]) for f in names),
        *(
            (f, f.removeprefix("User ").removeprefix("Team "))
            for f in (
                *(f"User works as {m['a'] or ''}{m['x']}" for m in _JOB_AS.finditer(sentence)),
                *owned,
                *_tools(sentence),
                *(_devices(sentence) if mine else ()),
                *(_homes(sentence) if mine else ()),
                *_habits(sentence),
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
