"""The rule table of the offline extractor: one clause in, zero or more facts out.

A clause reaches these rules with its lead-ins, prefaces and questions
already removed (see `offline_extract`). The first rule whose pattern
matches the start of the clause decides; its builder returns the facts, in
the third person with "User" (I, me, my) or "Team" (we, our) as subject.
Tense and polarity are kept: "I used to live in X" is not "User lives in X",
"I don't like X" is "User dislikes X", "I'm moving to X" is a plan, not a
move. The table itself, in order of precedence, is `RULES` below; each row
is (pattern, builder) and reads as one line of English.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from episodic.facts.chatter import is_conversation_act, is_passing_state
from episodic.facts.endings import GIVE_UP, LEAVE, PART, PART_TOGETHER
from episodic.facts.slots import tool_name

Build = Callable[[re.Match[str]], list[str]]
Rule = tuple[re.Pattern[str], Build]

_PRONOUNS = {"my": "their", "mine": "theirs", "me": "them", "myself": "themselves",
             "our": "their", "ours": "theirs", "us": "them", "ourselves": "themselves",
             "i": "they", "i'm": "they are", "we": "they", "we're": "they are"}  # fmt: skip
_PRONOUN_RE = re.compile(r"\b(?:i'm|we're|my|mine|me|myself|our|ours|us|ourselves|i|we)\b", re.I)
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is"}
_EMPTY_OBJECT = re.compile(
    r"^(?:it|that|this|these|those|you|your|them|to|so|too|an? (?:question|problem|issue|"
    r"idea|doubt|feeling|minute|second|moment|look|sec|bit|little)|no idea|some questions?|"
    r"one|something|anything|nothing)\b",
    re.I,
)
# a trailing clause is context, not part of the fact ("..., so schedule ...")
_TAIL = re.compile(
    r",\s*(?:so|because|but|which|since|and|as|not|though|although|if)\b.*$"
    r"|\s+(?:and|but) (?:he|she|it|they|we|i|i'm)\b.*$"
    r"|\s+(?:because|since|so that|if|unless)\b.*$"
    r"|,?\s+(?:now|these days|nowadays|currently|for now|at the moment|right now)$"
    r"|,\s*(?:remember|you know|as i said|like i said)$"
    r"|,?\s+(?:btw|by the way|fyi|lol|haha|tbh)$",
    re.I,
)
JOBS = (
    r"engineer|developer|programmer|designer|manager|scientist|analyst|nurse|doctor|"
    r"teacher|professor|lawyer|accountant|architect|researcher|consultant|writer|"
    r"student|intern|chef|pharmacist|dentist|barista|librarian|journalist|editor|"
    r"electrician|plumber|firefighter|pilot|photographer|musician|artist|founder|cto|ceo|"
    r"sre|devops|lead|administrator|admin|technician|therapist|veterinarian|vet|translator|"
    # trades, care, service and the professions: "I'm a paramedic" is a job, like
    # "engineer"; not words as often a trait ("a good cook", "a careful driver")
    r"paramedic|midwife|surgeon|physician|physiotherapist|psychologist|psychiatrist|"
    r"optometrist|radiographer|dietitian|nutritionist|caregiver|carer|nanny|counsell?or|"
    r"social worker|carpenter|mechanic|welder|roofer|tailor|farmer|baker|butcher|waiter|"
    r"waitress|bartender|hairdresser|barber|cashier|clerk|secretary|receptionist|cleaner|"
    r"janitor|courier|postman|soldier|police officer|detective|paralegal|solicitor|"
    r"barrister|attorney|banker|broker|auditor|actuary|economist|statistician|"
    r"mathematician|physicist|chemist|biologist|geologist|recruiter|salesperson|realtor|"
    r"estate agent|tutor|lecturer|instructor|copywriter|illustrator|animator|sysadmin|"
    r"entrepreneur|freelancer|contractor|machinist"
)
PETS = ("dog", "cat", "puppy", "kitten", "parrot", "rabbit", "bunny", "hamster", "horse",
        "fish", "turtle", "bird", "pet")  # fmt: skip
RELATIONS = (
    # the in-laws first: "mother" would match inside "mother-in-law" at the hyphen
    r"(?:mother|father|sister|brother|son|daughter)-in-law|in-laws|"
    r"step(?:mum|mom|mother|dad|father|son|daughter|brother|sister)|"
    r"grand(?:son|daughter|children|kids?|parents)|mum|mam|mama|mommy|mummy|papa|twin|"
    r"neighbou?r|flatmate|housemate|landlord|landlady|"
    r"wife|husband|partner|spouse|girlfriend|boyfriend|fianc[eé]e?|son|daughter|kids?|"
    r"children|child|mom|mother|dad|father|parents|brother|sister|siblings?|grandma|"
    r"grandmother|grandpa|grandfather|aunt|uncle|cousin|niece|nephew|best friend|friend|"
    r"roommate|boss|manager|colleague|coworker|" + "|".join(PETS)
)
_JOB_HEAD_RE = re.compile(rf"^(.*?\b(?:{JOBS})s?)(?:$|\s+and\s)", re.I)
_PLACE_START = re.compile(r"^[A-Z]")
_RELATION_RE = re.compile(rf"^(?:{RELATIONS})\b", re.I)


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
    return " ".join(out.split()).rstrip(" ,.!;:-")


def obj(text: str) -> str | None:
    """The object of a clause as it goes into a fact, or None when it carries none."""
    x = shift(_TAIL.sub("", text))
    return None if not x or _EMPTY_OBJECT.match(x) else x


def _verb_phrase(rest: str) -> str:
    head, _, tail = rest.partition(" ")
    return f"{third_person(head)} {tail}".strip()


def _subject(word: str) -> str:
    return "User" if word.casefold() in ("i", "i'm", "my", "me") else "Team"


def _fmt(template: str) -> Build:
    """A builder filling {x} (the checked object) and the other named groups."""

    def build(m: re.Match[str]) -> list[str]:
        x = obj(m["x"])
        if x is None:
            return []
        groups = {k: (v or "") for k, v in m.groupdict().items() if k != "x"}
        return [template.format(x=x, **groups)]

    return build


def _moved(m: re.Match[str]) -> list[str]:
    x = obj(m["x"])
    if x is None:
        return []
    if tool_name(x):
        return [f"{_subject(m['s'])} switched to {x}"]
    return [f"User moved to {x}"]


def _job_and_employer(m: re.Match[str]) -> list[str]:
    job, where = obj(m["x"]), obj(m["y"])
    out = []
    if job:
        out.append(f"User works as {m['a'] or ''}{job}".replace("  ", " "))
    if where and _PLACE_START.match(m["y"].strip()):
        out.append(f"User works at {where}")
    return out


def _is_a(m: re.Match[str]) -> list[str]:
    x = obj(m["x"])
    if x is None:
        return []
    # "a junior accountant and honestly ...": the job ends the fact
    job = _JOB_HEAD_RE.match(x)
    if job:
        return [f"User works as {job[1]}"]
    return [f"User is {x}"]


def _opinion(m: re.Match[str]) -> list[str]:
    x = obj(m["x"])
    if x is None:
        return []
    adverb = (m["adv"] or "").strip()
    verb = third_person(m["v"].lower())
    return [" ".join(p for p in ("User", adverb, verb, x) if p)]


def _dislike(m: re.Match[str]) -> list[str]:
    x = obj(m["x"])
    return [] if x is None else [f"User dislikes {x}"]


def _died(prefix: str) -> Build:
    def build(m: re.Match[str]) -> list[str]:
        when = shift(m["t"])
        return [f"{prefix}{shift(m['x'])} {m['v'].lower()}" + (f" {when}" if when else "")]

    return build


def _put_down(m: re.Match[str]) -> list[str]:
    return [f"{'User' + chr(39) + 's ' if m['p'] else ''}{m['x']} was put down"]


def _possessive(m: re.Match[str]) -> list[str]:
    x = obj(m["x"])
    if x is None or is_passing_state(x):
        return []
    mine = m["p"].casefold() == "my" or _RELATION_RE.match(m["a"])
    owner = "User's" if mine else "Team's"
    return [f"{owner} {m['a']} {m['v'].lower()} {x}"]


def _relative_does(m: re.Match[str]) -> list[str]:
    x = obj(m["x"])
    if x is None or is_passing_state(re.sub(r"^(?:is|was|are)\s+", "", x)):
        return []
    return [f"User's {m['a']} {x}"]


def _intends(template: str) -> Build:
    """A plan or intention, unless it is the next step of this chat ("I'll paste it")."""

    def build(m: re.Match[str]) -> list[str]:
        x = obj(m["x"])
        return [] if x is None or is_conversation_act(x) else [template.format(x=x)]

    return build


def _ended(m: re.Match[str]) -> list[str]:
    x = obj(m["x"])
    return [] if x is None else [f"{_subject(m['s'])} {m['v'].lower()} {x}"]


def _parted(m: re.Match[str]) -> list[str]:
    """ "Lena and I broke up", "my girlfriend and I split up": the user parted from X."""
    x = shift(m["x"])
    verb = m["v"].lower().removeprefix("got ")
    return [f"User divorced {x}" if verb == "divorced" else f"User {verb} with {x}"]


def _switched(m: re.Match[str]) -> list[str]:
    # "switched to oat milk instead of whole milk": what it replaced comes last
    new, sep, instead = m["x"].partition(" instead of ")
    x = obj(new)
    if x is None:
        return []
    y = m["y"] or (instead if sep else None)
    # a known tool names its kind, so the old one is found by slot; an
    # unknown one keeps what it replaced, so the merge can find that
    old = shift(_TAIL.sub("", y)) if y and not tool_name(x) else ""
    return [f"{_subject(m['s'])} switched {'from ' + old + ' ' if old else ''}to {x}"]


def _replaced(m: re.Match[str]) -> list[str]:
    x, old = obj(m["x"]), shift(m["y"])
    return [f"{_subject(m['s'])} replaced {old} with {x}"] if x and old else []


def _not(m: re.Match[str]) -> list[str]:
    x = obj(m["x"])
    if x is None:
        return []
    return [f"{_subject(m['s'])} does not {x}"]


_I = r"i(?:'m| am)"
_IV = r"i(?:'ve| have)?"
_ADV = (
    r"(?:(?:currently|now|still|also|mostly|mainly|actually|really|just|recently|finally|"
    r"always|usually|normally|generally) )*"
)
_S = r"(?P<s>i|we|our team|the team)"
_HAVE = r"(?: have|'ve)?(?: (?:just|recently|finally|already|now))*"


_TABLE: tuple[tuple[str, Build], ...] = (
    # tense and polarity first: what is not (or no longer) so
    (
        r"^i no longer (?P<x>.+)",
        lambda m: [f"User no longer {_verb_phrase(obj(m['x']) or '')}"] if obj(m["x"]) else [],
    ),
    (
        r"^(?P<s>i|we) (?:don't|do not) (?P<x>.+?) any ?more\b",
        lambda m: (
            [f"{_subject(m['s'])} no longer {_verb_phrase(obj(m['x']) or '')}"]
            if obj(m["x"])
            else []
        ),
    ),
    (
        rf"^{_I} (?:not|no longer) (?:living|based) in (?P<x>.+)",
        _fmt("User no longer lives in {x}"),
    ),
    (rf"^{_I} (?:not|no longer) (?:a (?:big )?fan of|into) (?P<x>.+)", _dislike),
    (rf"^{_I} no longer (?P<x>.+)", _fmt("User is no longer {x}")),
    (rf"^{_I} not (?P<x>.+?),? any ?more\b", _fmt("User is no longer {x}")),
    (r"^i (?:don't|do not|can't|cannot) (?:really )?(?:like|stand|bear) (?P<x>.+)", _dislike),
    (r"^(?P<s>i|we) (?:don't|do not) (?P<x>(?:live|work|use|own|have|eat|drink|smoke) .+)", _not),
    (
        r"^(?P<s>i|we) used to (?P<x>.+)",
        lambda m: [f"{_subject(m['s'])} used to {x}"] if (x := obj(m["x"])) else [],
    ),
    (
        r"^i never (?P<x>.+)",
        lambda m: [f"User never {_verb_phrase(obj(m['x']) or '')}"] if obj(m["x"]) else [],
    ),
    # what ended: given up, left, parted from (`endings`)
    (rf"^(?P<s>i|we){_HAVE} (?P<v>{GIVE_UP}|{LEAVE}|{PART}) (?P<x>.+)", _ended),
    (rf"^(?P<s>i|we){_HAVE} (?P<v>left) (?P<x>(?-i:[A-Z]).+)", _ended),
    (
        rf"^(?P<x>(?!(?:you|we|they|he|she|it|this|that)\b)[\w-]+|my (?:{RELATIONS})) and "
        r"(?:i|me)(?: have| had)?"
        rf"(?: (?:just|finally|recently))* (?P<v>{PART_TOGETHER})\b",
        _parted,
    ),
    # an explicit request to drop a fact
    (
        r"^(?:please )?(?:forget|disregard|ignore|delete|remove) (?:that|the fact that) (?P<x>.+)",
        _fmt("User asked to forget that {x}"),
    ),
    (
        r"^i (?:got|was) (?:laid off|fired) (?:from|by|at) (?P<x>.+)",
        _fmt("User no longer works at {x}"),
    ),
    # plans and intentions
    (rf"^{_I} (?:thinking (?:about|of)|considering) (?P<x>.+)", _fmt("User is considering {x}")),
    (
        rf"^(?:{_I} (?:planning|going|about|hoping) to|i (?:plan|intend|hope) to) (?P<x>.+)",
        _intends("User is planning to {x}"),
    ),
    (rf"^{_I} (?:moving|relocating) to (?P<x>.+)", _fmt("User is planning to move to {x}")),
    (r"^i(?:'ll| will) (?:probably |soon )?(?P<x>.+)", _intends("User will {x}")),
    # residence
    (
        rf"^(?:{_IV} {_ADV}(?:been )?(?:live|living|reside|residing|stay|staying)|"
        rf"{_I} {_ADV}(?:living|based|residing|located|settled|staying)|i live|i reside) "
        r"in (?P<x>.+)",
        _fmt("User lives in {x}"),
    ),
    (
        r"^(?:my|our) (?:home|house|place|apartment|flat) is (?:now )?in (?P<x>.+)",
        _fmt("User lives in {x}"),
    ),
    (r"^(?:i|we) (?:now )?call (?P<x>.+?) home\b", _fmt("User lives in {x}")),
    (r"^home is (?:now )?(?P<x>(?-i:[A-Z]).+)", _fmt("User lives in {x}")),
    (
        r"^(?P<s>i|we)(?:'ve|'d)? (?:just |recently |finally |have |had )*(?:moved|relocated)"
        r"(?: (?:house|back|over))?(?: from .+?)? to (?P<x>.+)",
        _moved,
    ),
    (
        rf"^{_S}{_HAVE} (?:switched|migrated|moved|changed) (?:over )?(?:from (?P<y>.+?) )?"
        r"(?:to|over to) (?P<x>.+)",
        _switched,
    ),
    (rf"^{_S}{_HAVE} (?:replaced|swapped) (?P<y>.+?) (?:with|for) (?P<x>.+)", _replaced),
    # "I'm in Glasgow so ...": where they are based, unless the clause says for how long
    (
        rf"^{_I} (?:currently )?in (?P<x>(?-i:[A-Z])[\w-]+(?: (?-i:[A-Z])[\w-]+)?)"
        r"(?!.*\b(?:this|next|for|until|till|today|tonight|tomorrow|right now|at the moment|"
        r"on (?:holiday|vacation|business|a trip))\b)",
        _fmt("User lives in {x}"),
    ),
    (r"^i grew up in (?P<x>.+)", _fmt("User grew up in {x}")),
    (rf"^{_I} (?:originally )?from (?P<x>.+)", _fmt("User is from {x}")),
    # names, ages, family, pets
    (r"^(?:my name is|call me|my name's) (?P<x>.+)", _fmt("User's name is {x}")),
    (
        rf"^{_I} (?:now )?(?P<x>\d{{1,3}})(?: years? old)?(?:$|,|\s+(?:now|already|this|today)\b)",
        _fmt("User is {x} years old"),
    ),
    (
        rf"^{_I} (?P<x>married|single|divorced|engaged|pregnant|retired|widowed)\b(?P<r>.*)",
        lambda m: [f"User is {m['x'].lower()}{shift(m['r']) and ' ' + shift(m['r'])}"],
    ),
    (
        r"^i (?:just )?got (?P<x>married|engaged|divorced)\b(?P<r>.*)",
        lambda m: [f"User is {m['x'].lower()}{shift(m['r']) and ' ' + shift(m['r'])}"],
    ),
    (
        rf"^(?P<p>my|our) (?P<a>(?:{RELATIONS})(?: (?-i:[A-Z])[\w-]+)?) "
        r"(?:just )?turned (?P<x>\d+)",
        _fmt("User's {a} is {x} years old"),
    ),
    (
        r"^(?:i|we) (?:(?:have|'ve|just|recently|also|now) )*(?:have|own|got|adopted|rescued|"
        r"brought home) (?P<x>(?:an? |two |three )?[\w-]+ (?:named|called) [\w-]+.*)",
        _fmt("User has {x}"),
    ),
    (r"^(?P<p>my|our) (?P<x>[\w' -]{1,40}?) (?P<v>died|passed away)(?P<t>.*)", _died("User's ")),
    (r"^(?:i|we) (?:had to )?put (?:(?P<p>my|our) )?(?P<x>[\w-]+(?: [\w-]+)?) down", _put_down),
    (
        r"^(?!(?:it|this|that|he|she|they|everything|something|nothing|someone)\b)"
        r"(?P<x>[\w'-]{1,40}) (?P<v>died|passed away)(?P<t>.*)",
        _died(""),
    ),
    # work
    (
        rf"^(?:i work|{_I} {_ADV}working|{_IV} {_ADV}been working|{_IV} {_ADV}started) as "
        r"(?P<a>an? )?(?P<x>.+?) (?:at|for) (?P<y>.+)",
        _job_and_employer,
    ),
    (rf"^{_I} (?P<a>an? )(?P<x>[\w -]*?(?:{JOBS})s?) (?:at|for|with) (?P<y>.+)", _job_and_employer),
    (
        rf"^(?:i {_ADV}work|{_I} {_ADV}(?:working|employed)|{_IV} {_ADV}been working) "
        r"(?P<v>at|for|as|on|by) (?P<x>.+)",
        lambda m: (
            [f"User works {'at' if m['v'].lower() == 'by' else m['v'].lower()} {x}"]
            if (x := obj(m["x"]))
            else []
        ),
    ),
    (
        rf"^{_IV} {_ADV}(?:joined|started (?:a new job |working )?at|got a (?:new )?job at|"
        r"started a new (?:job|role|position) at|been hired by|accepted an offer from) (?P<x>.+)",
        _fmt("User works at {x}"),
    ),
    (
        r"^my (?:job|role|position|title|profession) is (?:now )?(?P<x>.+)",
        _fmt("User works as {x}"),
    ),
    # tools
    (
        rf"^{_S} {_ADV}(?:uses?|rely on|relies on|work with|code in|write) (?P<x>.+)",
        lambda m: [f"{_subject(m['s'])} uses {x}"] if (x := obj(m["x"])) else [],
    ),
    (
        rf"^(?P<s>i|we)(?:'m|'re| am| are) {_ADV}(?:using|on) (?P<x>.+)",
        lambda m: (
            [f"{_subject(m['s'])} uses {x}"]
            if (x := obj(m["x"])) and (m.group(0).lower().split()[1:2] != ["on"] or tool_name(x))
            else []
        ),
    ),
    (
        rf"^{_S} (?:have |'ve |just )?decided to (?P<x>.+)",
        lambda m: [f"{_subject(m['s'])} decided to {x}"] if (x := obj(m["x"])) else [],
    ),
    # preferences
    (rf"^{_I} (?:a )?(?:big |huge )?fan of (?P<x>.+)", _fmt("User likes {x}")),
    (r"^i(?:'d| would) (?:much )?rather (?P<x>.+)", _fmt("User prefers to {x}")),
    (
        r"^i (?P<adv>(?:(?:always|usually|generally|really|strongly|definitely|mostly|"
        r"totally|absolutely|now) )*)(?P<v>like|love|prefer|enjoy|hate|dislike|want|need|adore|"
        r"favou?r) (?P<x>.+)",
        # a bare "I need X" asks for something in this chat ("I need a rubric for ...")
        lambda m: [] if m["v"].lower() == "need" and not m["adv"] else _opinion(m),
    ),
    (
        r"^(?:please )?(?P<v>always|never) (?!mind\b)(?P<x>.+)",
        lambda m: (
            [f"User wants the assistant to {m['v'].lower()} {x}"] if (x := obj(m["x"])) else []
        ),
    ),
    # habits, possessions, relatives, the rest
    (
        r"^(?P<s>i|we) (?:(?:usually|often|always|still|also|regularly) )*(?P<v>drink|eat|smoke|"
        r"run|swim|cycle|play|speak|read|drive|cook|meditate|walk|practi[cs]e|study|teach|"
        r"volunteer|climb|ski|surf|knit|paint|garden|bake) (?P<x>.+)",
        lambda m: (
            [f"{_subject(m['s'])} {third_person(m['v'].lower())} {x}"] if (x := obj(m["x"])) else []
        ),
    ),
    (r"^(?:i|we) (?:just )?sold (?P<x>.+)", _fmt("User sold {x}")),
    (r"^(?:i|we)(?:'ve| have)? (?:have|own|got) (?P<x>.+)", _fmt("User has {x}")),
    (
        rf"^(?P<p>my) (?P<a>(?:{RELATIONS})(?: (?-i:[A-Z])[\w-]+)?) (?P<x>(?:is|was|works|lives|"
        r"loves|likes|has|plays|studies|goes|moved|just|recently|hates|owns|teaches|got)\b.+)",
        _relative_does,
    ),
    (r"^(?P<p>my|our) (?P<a>[\w' -]{1,40}?) (?P<v>is|are) (?P<x>.+)", _possessive),
    (rf"^{_I} (?P<x>an? (?!bit\b|little\b|tad\b|lot\b)\w.*)", _is_a),
    (
        rf"^{_I} (?:now )?(?P<x>(?:vegan|vegetarian|pescatarian|flexitarian|allergic to .+|"
        r"lactose intolerant|left-handed|colou?r ?blind|diabetic))"
        r"(?:,? (?:now|these days|nowadays))?(?=$|,|\s+(?:so|and|but|because)\b)",
        _fmt("User is {x}"),
    ),
    # "as a pharmacist I get asked ...": the job the clause speaks from
    (
        rf"^as (?P<a>an? )(?P<x>[\w -]*?\b(?:{JOBS}))\b(?=,|\s+(?:i|we)\b)",
        _fmt("User works as {a}{x}"),
    ),
)
RULES: tuple[Rule, ...] = tuple((re.compile(p, re.I), f) for p, f in _TABLE)
