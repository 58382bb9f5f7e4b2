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

from episodic.facts.chatter import is_conversation_act, is_passing_state
from episodic.facts.endings import GIVE_UP, LEAVE, PART, PART_TOGETHER
from episodic.facts.indirect import DWELLING, INDIRECT
from episodic.facts.jobs import JOB
from episodic.facts.slots import DEVICE_WORD, tool_name
from episodic.facts.when import MONTHS, SEASONS, WEEKDAYS
from episodic.facts.wording import (
    TAIL,
    Build,
    fmt,
    is_past,
    obj,
    shift,
    third_person,
    trimmed,
)

Rule = tuple[re.Pattern[str], Build]

# animals kept as pets (two-word kinds first, so "guinea pig" wins over "pig")
PETS = ("guinea pig", "bearded dragon", "dog", "cat", "puppy", "kitten", "parrot", "rabbit",
        "bunny", "hamster", "gerbil", "ferret", "chinchilla", "hedgehog", "rat", "mouse",
        "horse", "pony", "donkey", "goat", "pig", "chicken", "hen", "duck", "fish",
        "goldfish", "axolotl", "turtle", "tortoise", "lizard", "gecko", "iguana", "snake",
        "frog", "tarantula", "bird", "budgie", "cockatiel", "canary", "parakeet",
        # breeds said for the kind ("a rescue greyhound")
        "greyhound", "whippet", "lurcher", "labrador", "poodle", "beagle", "terrier", "spaniel",
        "collie", "retriever", "husky", "pug", "dachshund", "corgi", "chihuahua", "bulldog",
        "labradoodle", "cockapoo", "goldendoodle", "schnauzer", "rottweiler", "dalmatian",
        "pomeranian", "tabby",
        "pet")  # fmt: skip
RELATIONS = (
    # the in-laws first: "mother" would match inside "mother-in-law" at the hyphen
    r"(?:mother|father|sister|brother|son|daughter)-in-law|in-laws|"
    r"step(?:mum|mom|mother|dad|father|son|daughter|brother|sister)|"
    r"grand(?:son|daughter|children|kids?|parents)|mum|mam|mama|mommy|mummy|papa|twins?|"
    r"neighbou?r|flatmate|housemate|landlord|landlady|"
    r"wife|husband|partner|spouse|girlfriend|boyfriend|fianc[eé]e?|son|daughter|kids?|"
    r"children|child|mom|mother|dad|father|parents|brother|sister|siblings?|grandma|"
    r"grandmother|grandpa|grandfather|aunt|uncle|cousin|niece|nephew|best friend|friend|"
    r"roommate|boss|manager|colleague|coworker|" + "|".join(PETS)
)
_JOB_HEAD_RE = re.compile(rf"^(.*?\b(?:{JOB})s?)(?:$|,|\s+(?:and|for|since)\s)", re.I)
_PLACE_START = re.compile(r"^(?:the )?[A-Z]")  # a name: "Acme", "the Charité"
_RELATION_RE = re.compile(rf"^(?:{RELATIONS})\b", re.I)


# where one goes back to that is no choice of a thing: "went back to work"
_NOT_RETURNED = re.compile(
    r"^(?:work|bed|sleep|school|uni|college|class|normal|square one|basics|it|that|this|them|"
    r"him|her|the (?:office|gym|doctor|vet|store|shop|car|start|beginning|drawing board|hotel|"
    r"house|flat|room|city|hospital|airport|station)|my (?:desk|room|place|parents|hometown|"
    r"flat|house|car|old)|where|what|how|reading|watching|town|the same)\b",
    re.I,
)


_PAST = {
    "drop": "dropped", "quit": "quit", "cancel": "cancelled", "give up": "gave up",
    "sell": "sold", "stop": "stopped", "leave": "left",
}  # fmt: skip


def _route(rest: str) -> str | None:
    """The object of a habit; "to Lucerne on my e-bike" keeps its "to"."""
    if rest[:3].casefold() == "to " and (x := obj(rest[3:])):
        return f"to {x}"
    return obj(rest)


def _verb_phrase(rest: str) -> str:
    head, _, tail = rest.partition(" ")
    # a past form keeps its form: "I never got to episode 2", "I forgave him"
    verb = head if is_past(head.casefold()) else third_person(head)
    return f"{verb} {tail}".strip()


def _subject(word: str) -> str:
    return "User" if word.casefold() in ("i", "i'm", "my", "me") else "Team"


def _moved(m: re.Match[str]) -> list[str]:
    # "denver last week, boxes everywhere": a lowercase word after a comma is
    # no part of the place ("Portland, Oregon" is)
    x = obj(re.sub(r",\s+(?-i:[a-z]).*$", "", m["x"]))
    if x is None:
        return []
    if tool_name(x):
        return [f"{_subject(m['s'])} switched to {x}"]
    return [f"User moved to {x}"]


def _job(m: re.Match[str]) -> list[str]:
    job = obj(m["x"])
    return [f"User works as {m['a'] or ''}{job}".replace("  ", " ")] if job else []


# what follows a job's "at" when it is no employer: "a nurse at night", "at heart"
_NOT_EMPLOYER = re.compile(
    r"^(?:home|night|nights|heart|work|school|the moment|the minute|least|most|first|last|"
    r"times|all|best|worst|weekends?|(?:this|that|my|our|your|his|her|their|some|any|one)\b)",
    re.I,
)


def _job_and_employer(m: re.Match[str]) -> list[str]:
    # "ETH working on robotics": the employer ends where the work begins
    # ", mostly sql and tableau": a lowercase word after a comma is what they do there
    where = obj(re.sub(r",?\s+(?:working|focusing) on\b.*$|,\s+(?-i:[a-z]).*$", "", m["y"]))
    out = _job(m)
    y = m["y"].strip()
    # a lowercase employer after "at" ("a backend engineer at stripe") when it is
    # no idiom; after "for" it is as often whom the work is for ("a tutor for kids")
    at = m.string[: m.start("y")].rstrip().casefold().endswith(" at")
    if where and (_PLACE_START.match(y) or (at and not _NOT_EMPLOYER.match(y))):
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


def _instruction(m: re.Match[str]) -> list[str]:
    x = obj(m["x"])
    return [] if x is None else [f"User wants the assistant to {x[0].lower()}{x[1:]}"]


def _dislike(m: re.Match[str]) -> list[str]:
    x = obj(m["x"])
    return [] if x is None else [f"User dislikes {x}"]


def _died(prefix: str) -> Build:
    def build(m: re.Match[str]) -> list[str]:
        when = shift(m["t"])
        return [f"{prefix}{shift(m['x'])} {m['v'].lower()}" + (f" {when}" if when else "")]

    return build


def _lost(m: re.Match[str]) -> list[str]:
    """ "we lost Pistachio" -> "Pistachio died"; "lost my grandma" -> "User's grandma died"."""
    return [shift(m["x"]).replace("their ", "User's ") + " died"]


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


# "moved out of the leith flat, staying with my parents in stirling til i find
# somewhere": where they are now follows what ended
_NOW_STAYING = re.compile(
    r",\s+(?:now\s+)?(?P<v>staying|living|crashing|sleeping) (?P<b>(?:with|at|in) .+?)"
    r"(?:\s+(?:til|till|until|while|for now|for a bit|for a while)\b.*)?$",
    re.I,
)


def _ended(m: re.Match[str]) -> list[str]:
    now = _NOW_STAYING.search(m["x"])
    x = obj(m["x"][: now.start()] if now else m["x"])
    if x is None:
        return []
    ended = f"{_subject(m['s'])} {m['v'].lower()} {x}"
    return [ended, f"User is {now['v'].lower()} {shift(now['b'])}"] if now else [ended]


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
    old = shift(TAIL.sub("", y)) if y and not tool_name(x) else ""
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
# what follows "I'm in" when it is a state, a field or a place of the moment, not a town
NOT_A_PLACE = (
    r"trouble|love|bed|pain|charge|school|college|uni|university|class|town|office|hospital|"
    r"tech|sales|finance|marketing|retail|law|medicine|healthcare|education|debt|shock|tears|"
    r"luck|time|line|place|shape|touch|business|favou?r|therapy|recovery|rehab|labou?r|"
    r"prison|jail|court|church|mourning|denial|limbo|agony|heaven|hell|public|private|"
    r"control|danger|doubt|hiding|lockdown|quarantine|isolation|transit|traffic|work|"
    r"meetings?|hurry|rush|bits|pieces|pieces|process|progress|order|general|total|"
    r"front|between|there|here|it|this|that|the|my|our|an?|two|too|way|over"
)
_HAVE = r"(?: have|'ve)?(?: (?:just|recently|finally|already|now))*"
# an injury: what was torn, broken or sprained ("tore my acl")
INJURED = r"tore|torn|broke|broken|sprained|fractured|dislocated|injured|pulled|twisted|ruptured"
BODY_PART = (
    r"acl|mcl|meniscus|achilles|hamstring|rotator cuff|ankle|wrist|arm|leg|knee|back|shoulder|"
    r"hip|collarbone|rib|ribs|finger|toe|elbow|foot|hand|nose|neck|calf|groin|thumb|jaw|pelvis"
)
# a sport whose gerund names a habit ("bouldering every tuesday")
SPORT = (
    r"bouldering|climbing|running|swimming|cycling|hiking|skiing|snowboarding|surfing|skating|"
    r"rowing|dancing|boxing|lifting|jogging|sailing|fishing|golfing|kayaking|paddleboarding|"
    r"camping|riding|fencing|diving|yoga|pilates|crossfit|spinning|karate|judo|tennis|"
    r"football|basketball|volleyball|badminton|squash|padel"
)
# what a dropped-subject state ("been vegan 2 yrs") lasts
_FOR_YEARS = (
    r"(?:for )?(?:(?:about|around|almost|nearly|over|like) )?"
    r"(?:\d+|a few|a couple(?: of)?|many|two|three|four|five|six|ten|several) "
    r"(?:yrs?|years?|months?|mos?)"
)
# a time a plan can be moved to
_TIME_WORD = (
    rf"{MONTHS}|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec|{WEEKDAYS}|{SEASONS}|"
    r"week|month|year|weekend|tomorrow|later|\d"
)
# what "I'm on a ..." names when it is the user's machine ("im on a macbook air m2")
_DEVICE = re.compile(
    rf"^(?:an? |my )?(?:(?:19|20)\d\d )?(?:{DEVICE_WORD}|mac|imac|mac mini|android|galaxy|"
    r"surface|windows|linux|ubuntu|raspberry pi)\b",
    re.I,
)
FROM_NOW_ON = r"from now on|going forward|moving forward|in (?:the )?future|by default"
# what a standing instruction to an assistant opens with, capital or not
_INSTRUCTION = (
    r"use|write|keep|run|add|call|reply|answer|respond|format|put|send|avoid|stop|start|"
    r"remember|ask|check|include|skip|make|give|show|list|sort|name|commit|test|document|"
    r"always|never|don't|do not"
)
# a verb first: not a subject ("from now on, I'll ..."), not a capital ("Tuesdays are ...")
_IMPERATIVE = (
    r"(?!(?:i|i'm|i'll|i've|we|we're|we'll|you|you'll|he|she|they|it|it's|my|our|the|this|"
    r"that|there|every|each|all|no|some|any|an?)\b)(?=(?-i:[a-z]))"
)


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
        fmt("User no longer lives in {x}"),
    ),
    (rf"^{_I} (?:not|no longer) (?:a (?:big )?fan of|into) (?P<x>.+)", _dislike),
    (rf"^{_I} no longer (?P<x>.+)", fmt("User is no longer {x}")),
    # "im NOT allergic to penicillin after all", "I'm not actually employed by X"
    (
        rf"^{_I} not (?:actually |really |even )?(?P<x>allergic to .+?|(?:lactose|gluten) "
        r"intolerant|vegan|vegetarian|pescatarian|diabetic)(?:,? after all)?$",
        fmt("User is not {x}"),
    ),
    (
        rf"^{_I} not (?:actually |really )?(?:employed by|working (?:for|at)|an employee of|"
        r"on (?:the )?staff at) (?P<x>.+)",
        fmt("User does not work at {x}"),
    ),
    # "pescatarian here, need ...", "nurse here": who is writing
    (
        r"^(?P<x>(?:vegan|vegetarian|pescatarian|coeliac|celiac|diabetic))(?: here)(?=$|,|\s)",
        fmt("User is {x}"),
    ),
    (
        rf"^(?:{_I} )?no longer (?:at|with|working (?:at|for)) (?P<x>.+)",
        fmt("User no longer works at {x}"),
    ),
    # "not using vscode anymore": the subject dropped
    (r"^not (?:using|on) (?P<x>.+?),? any ?more\b", fmt("User no longer uses {x}")),
    (rf"^{_I} not (?P<x>.+?),? any ?more\b", fmt("User is no longer {x}")),
    (
        r"^not (?P<x>(?:vegan|vegetarian|pescatarian|flexitarian|keto|gluten[- ]free|"
        r"dairy[- ]free|sober|teetotal|single|married|engaged|a student))(?: any ?more| now)\b",
        fmt("User is no longer {x}"),
    ),
    (
        rf"^(?:{_I} (?:now )?|{_IV} {_ADV}(?:started|begun|gone back to) )(?:eating|drinking) "
        r"(?P<x>.+?) again\b",
        lambda m: (
            [f"User {'eats' if 'eat' in m.group(0) else 'drinks'} {x}"]
            if (x := obj(m["x"]))
            else []
        ),
    ),
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
    # "ditched the Garmin for a Coros": an ending that names what replaced it
    (
        rf"^{_S}{_HAVE} (?:ditched|dropped|dumped|traded|swapped|gave up) (?P<y>.+?) for "
        # not what the ending was for or how long: "ditched the gym for good"
        r"(?!(?:good|now|ever|nothing|free|money|cash|a while|a bit|(?:a|the|this|that) (?:day|"
        r"night|week|weekend|month|year|summer|winter)|(?:some|personal|health|work) reasons?)\b)"
        r"(?P<x>(?:an? |the |my )?[^\W\d_]{3,}.*)",
        _replaced,
    ),
    # what ended: given up, left, parted from (`endings`)
    (rf"^(?P<s>i|we){_HAVE} (?P<v>{GIVE_UP}|{LEAVE}|{PART}) (?P<x>.+)", _ended),
    (rf"^(?P<s>i|we){_HAVE} (?P<v>left) (?P<x>(?-i:[A-Z]).+)", _ended),
    # a sport not done for a while has ended: "haven't been climbing in months"
    (
        rf"^i (?:haven't|have not|havent) (?:been |gone |done |played )?(?P<x>{SPORT}) "
        r"(?:in|for) (?:months|weeks|ages|a while|years|a year|(?:\d+|a few|two|three) \w+)\b",
        fmt("User stopped {x}"),
    ),
    (
        rf"^(?:me|i) and (?P<x>my (?:{RELATIONS})|(?-i:[A-Z])[\w-]+)(?: have| had)?"
        rf"(?: (?:just|finally|recently))* (?P<v>{PART_TOGETHER})\b",
        _parted,
    ),
    (
        rf"^(?P<x>(?!(?:you|we|they|he|she|it|this|that)\b)[\w-]+|my (?:{RELATIONS})) and "
        r"(?:i|me)(?: have| had)?"
        rf"(?: (?:just|finally|recently))* (?P<v>{PART_TOGETHER})\b",
        _parted,
    ),
    # an explicit request to drop a fact
    (
        r"^(?:please )?(?:forget|disregard|ignore|delete|remove) (?:that|the fact that) (?P<x>.+)",
        fmt("User asked to forget that {x}"),
    ),
    (
        r"^(?:please )?(?:forget|disregard|ignore) (?:what|everything|anything|all) "
        r"(?:i|we) (?:said|told you|mentioned|wrote) (?:about|regarding) (?P<x>.+)",
        fmt("User asked to forget about {x}"),
    ),
    (
        r"^i (?:got|was|have been|'ve been) (?:laid off|fired|made redundant|let go) "
        r"(?:from|by|at) (?P<x>.+)",
        fmt("User no longer works at {x}"),
    ),
    # plans and intentions
    (rf"^{_I} (?:thinking (?:about|of)|considering) (?P<x>.+)", fmt("User is considering {x}")),
    (
        rf"^(?:{_I} (?:planning|going|about|hoping) to|i (?:plan|intend|hope) to) (?P<x>.+)",
        _intends("User is planning to {x}"),
    ),
    (rf"^{_I} (?:moving|relocating) to (?P<x>.+)", fmt("User is planning to move to {x}")),
    (rf"^{_I} {_ADV}planning (?P<x>an? .+)", fmt("User is planning {x}")),
    (
        rf"^(?:i|we)(?:'ve| have)? {_ADV}(?:signed up|registered|enrolled) (?:for|in) (?P<x>.+)",
        fmt("User signed up for {x}"),
    ),
    # "we pushed japan to october": a plan moved in time (to a time: "pushed the
    # branch to origin" is git's)
    (
        rf"^(?:i|we)(?:'ve| have)? {_ADV}(?:pushed|postponed|rescheduled|delayed|bumped) "
        r"(?:back )?(?:the |our |my )?(?P<y>.+?) (?:back )?(?:to|until|till) "
        rf"(?P<x>(?:next |this |early |late |mid[- ])?(?:{_TIME_WORD})\b.*)",
        lambda m: (
            [f"User rescheduled {y} to {x}"] if (x := obj(m["x"])) and (y := shift(m["y"])) else []
        ),
    ),
    (r"^i(?:'ll| will) (?:probably |soon )?(?P<x>.+)", _intends("User will {x}")),
    # "booked flights to lisbon for june": a trip planned
    (
        rf"^(?:{_IV}|we(?:'ve| have)?) {_ADV}booked (?:(?:the|our|my|a|some|cheap|two|2) )?"
        r"(?:flights?|tickets?|trip|holiday|vacation|hotel|airbnb|trains?|ferry) (?:to|for|in) "
        r"(?P<x>.+)",
        fmt("User is travelling to {x}"),
    ),
    # "I'm off to my cousin's wedding in cork next week": a plan with a date
    (
        rf"^{_I} off to (?P<x>(?!(?:bed|work|sleep|the gym|school|class)\b).+?\b(?:next|this) "
        rf"(?:week|weekend|month|{WEEKDAYS})\b.*)",
        fmt("User is going to {x}"),
    ),
    # "I am leaving for a conference in Tallinn for five days": a trip with a place
    (
        rf"^{_I} (?:leaving|flying|heading|travell?ing) (?:for|to) "
        r"(?P<x>(?:an? |the |my )?[\w ]{0,30}?\b(?-i:[A-Z])[\w-]+.*)",
        fmt("User is travelling to {x}"),
    ),
    # "had to drop the pottery class": a thing given up, not by choice
    (
        r"^(?:(?P<s>i|we) )?had to (?P<v>drop|quit|cancel|give up|sell|stop|leave) "
        r"(?P<x>(?:the|my|our) (?:[\w-]+ ){0,3}?(?:class(?:es)?|course|lessons|membership|"
        r"subscription|trip|holiday|vacation|wedding|lease|contract|car|bike|flat|apartment|"
        r"house|job|gym|team|club|choir|band|league|therapy)\b.*)",
        lambda m: (
            [f"{_subject(m['s'] or 'i')} {_PAST[m['v'].lower()]} {x}"] if (x := obj(m["x"])) else []
        ),
    ),
    # "had to cancel lisbon": a trip called off, named by its place (an article
    # makes it a thing: "had to cancel the deploy")
    (
        r"^(?:i |we )?had to cancel (?!(?:everything|it|that|this|them|plans|again)\b)"
        r"(?P<x>[^\W\d_][\w-]*)(?: trip)?(?:,.*)?$",
        fmt("User cancelled {x}"),
    ),
    # residence
    (
        rf"^(?:{_IV} {_ADV}(?:been )?(?:live|living|reside|residing|stay|staying)|"
        rf"{_I} {_ADV}(?:living|based|residing|located|settled|staying)|i live|i reside|"
        # a household's home is the user's: "we live in utrecht"
        rf"we {_ADV}live|we(?:'re| are) {_ADV}living|we(?:'ve| have) {_ADV}been living|"
        # "I want to stay living in Leeds": a home kept
        r"(?:i|we) (?:want to|would like to|'d like to|plan to|will|'ll) (?:stay|keep) living) "
        r"in (?P<x>.+)",
        # "I live in sublime all day": a tool one lives in is one used
        lambda m: (
            [f"User uses {tool_name(x) or x}" if tool_name(x) else f"User lives in {x}"]
            if (x := obj(m["x"]))
            else []
        ),
    ),
    # "been in leeds 3 yrs": a place lived in for a span is home
    (
        rf"^i(?:'ve| have) {_ADV}been (?:living |based )?(?:here )?in "
        rf"(?P<x>(?!(?:{NOT_A_PLACE})\b)[^\W\d_][\w' -]*?),? {_FOR_YEARS}\b",
        fmt("User lives in {x}"),
    ),
    (
        r"^(?:my|our) (?:home|house|place|apartment|flat) is (?:now )?in (?P<x>.+)",
        fmt("User lives in {x}"),
    ),
    (r"^(?:i|we) (?:now )?call (?P<x>.+?) home\b", fmt("User lives in {x}")),
    # "finally settled into the new flat in leeds": a home moved into is where they live
    (
        rf"^(?:i|we)(?:'ve| have)? (?:just |finally |now )*(?:(?:settled|moved) in(?:to)?|"
        r"got (?:the )?keys (?:to|for)) "
        rf"(?:the|my|our|a) (?:new )?(?:{DWELLING}) in (?P<x>.+)",
        fmt("User lives in {x}"),
    ),
    (r"^home is (?:now )?(?P<x>(?-i:[A-Z]).+)", fmt("User lives in {x}")),
    # "moved back in with my parents in sacramento"
    (
        r"^(?:i|we)(?:'ve| have)? (?:just |finally |recently )*moved (?:back )?in with "
        r"(?:[\w' -]+?) in (?P<x>[^\W\d_][\w' -]*?)(?: for now| for a while| again)?$",
        fmt("User lives in {x}"),
    ),
    (
        r"^(?P<s>i|we)(?:'ve|'d)? (?:just |recently |finally |have |had )*(?:moved|relocated)"
        r"(?: (?:house|back home|back|over|home))?(?: from .+?)? to (?P<x>.+)",
        _moved,
    ),
    (
        rf"^{_S}{_HAVE} (?:(?:got|was|been) )?(?:switched|migrated|moved|changed) (?:over )?"
        r"(?:(?:(?:the|our|my) [\w-]+ )?(?:from|off(?: of)?|away from) (?P<y>.+?) )?"
        # "switched my editor to zed"
        r"(?:(?:the|our|my) (?!(?:from|off|away)\b)[\w-]+ )?(?:to|over to) (?P<x>.+)",
        _switched,
    ),
    (rf"^{_S}{_HAVE} (?:replaced|swapped) (?P<y>.+?) (?:with|for) (?P<x>.+)", _replaced),
    # "we're moving everything from heroku to aws": a migration under way
    (
        rf"^(?P<s>i|we)(?:'re|'m| are| am) {_ADV}(?:moving|migrating|switching|porting) "
        r"(?:(?:everything|it all|all of it|(?:the|our|my) [\w-]+(?: [\w-]+)?) )?(?:over )?"
        r"from (?P<y>.+?) (?:over )?to (?P<x>.+)",
        lambda m: (
            [f"{_subject(m['s'])} is migrating from {y} to {x}"]
            if (x := obj(m["x"])) and (y := shift(m["y"]))
            else []
        ),
    ),
    # "went full neovim", "went all in on rust": a switch said loosely
    (
        rf"^{_S}{_HAVE} (?:went|gone|going) (?:full|all[- ]in (?:on|with)|over to) (?P<x>.+)",
        lambda m: [f"{_subject(m['s'])} switched to {x}"] if (x := obj(m["x"])) else [],
    ),
    # "I'm in Glasgow so ...", "i'm stuck here in tromsø": where they are based,
    # unless the clause (not what follows its "so" / "but") says for how long;
    # a lowercase name only alone before the clause ends, and not an idiom
    # ("I'm in trouble", "i'm in sales")
    (
        rf"^{_I} (?:(?:currently|still|stuck|here|over|out|back|now) )*in "
        r"(?P<x>(?-i:[A-Z])[\w-]+(?: (?-i:[A-Z])[\w-]+)?"
        rf"|(?!(?:{NOT_A_PLACE})\b)[^\W\d_]{{3,}}(?=\s*(?:$|,|\s(?:so|and|but|btw|now)\b)))"
        r"(?!(?:(?!,|\s(?:so|and|but|because)\s).)*\b(?:this|next|for|until|till|today|tonight|"
        r"tomorrow|right now|at the moment|on (?:holiday|vacation|business|a trip))\b)",
        fmt("User lives in {x}"),
    ),
    (r"^i grew up in (?P<x>.+)", fmt("User grew up in {x}")),
    (rf"^{_I} (?:originally )?from (?P<x>.+)", fmt("User is from {x}")),
    # names, ages, family, pets
    (r"^(?:my name is|call me|my name's) (?P<x>.+)", fmt("User's name is {x}")),
    (
        rf"^{_I} (?:now )?(?P<x>\d{{1,3}})(?: years? old)?(?:$|,|\s+(?:now|already|this|today)\b)",
        fmt("User is {x} years old"),
    ),
    (
        rf"^{_I} (?P<x>married|single|divorced|engaged|pregnant|retired|widowed)\b(?P<r>.*)",
        lambda m: [f"User is {m['x'].lower()}" + (f" {r}" if (r := trimmed(m["r"])) else "")],
    ),
    # "I retired at the end of term after 31 years at Ridgeway": retired, and from there
    (
        r"^i (?:have |'ve )?(?:just |finally |officially )*retired\b(?P<r>.*)",
        lambda m: [
            "User is retired",
            *(
                [f"User retired from {w[1]}"]
                if (
                    w := re.search(
                        r"\b(?:at|from) ((?-i:[A-Z])[\w&'-]*(?: (?-i:[A-Z])[\w&'-]*)*)", m["r"]
                    )
                )
                else []
            ),
        ],
    ),
    (
        r"^i (?:just )?got (?P<x>married|engaged|divorced)\b(?P<r>.*)",
        lambda m: [f"User is {m['x'].lower()}" + (f" {r}" if (r := trimmed(m["r"])) else "")],
    ),
    (
        rf"^(?P<p>my|our) (?P<a>(?:{RELATIONS})(?: (?-i:[A-Z])[\w-]+)?) "
        r"(?:just )?turned (?P<x>\d+)",
        fmt("User's {a} is {x} years old"),
    ),
    (
        r"^(?:i|we)(?:'ve)? (?:(?:have|'ve|just|recently|also|now) )*"
        r"(?:have|own|got|adopted|rescued|brought home) "
        r"(?P<x>(?:an? |two |three )?[\w-]+(?: [\w-]+)? (?:named|called) [\w-]+.*)",
        fmt("User has {x}"),
    ),
    (r"^(?P<p>my|our) (?P<x>[\w' -]{1,40}?) (?P<v>died|passed away)(?P<t>.*)", _died("User's ")),
    # "we lost Pistachio back in March": a named one (not "lost my keys", "lost my job")
    (
        rf"^(?:i|we) (?:just )?lost (?P<x>(?-i:[A-Z])[\w-]+|(?:my|our) (?:{RELATIONS})"
        r"(?: (?-i:[A-Z])[\w-]+)?)(?= back| in| last| this| on| to|,|$)",
        _lost,
    ),
    (r"^(?:i|we) (?:had to )?put (?:(?P<p>my|our) )?(?P<x>[\w-]+(?: [\w-]+)?) down", _put_down),
    (
        r"^(?!(?:it|this|that|he|she|they|everything|something|nothing|someone)\b)"
        r"(?P<x>[\w'-]{1,40}) (?P<v>died|passed away)(?P<t>.*)",
        _died(""),
    ),
    # health: an injury, a condition, a medicine a doctor prescribed
    (
        rf"^i {_ADV}(?:have )?(?:{INJURED}) (?P<x>my (?:(?:left|right) )?(?:{BODY_PART}))\b",
        lambda m: [f"User injured {x}"] if (x := obj(m["x"])) else [],
    ),
    (
        rf"^i {_ADV}(?:get|have|suffer from|struggle with|deal with|live with) "
        r"(?P<x>(?:(?:chronic|bad|frequent|occasional|severe|mild) )?(?:migraines?|headaches|"
        r"panic attacks|anxiety|depression|asthma|eczema|insomnia|back pain|acid reflux|ibs|"
        r"adhd|diabetes|arthritis|psoriasis|hay fever|seizures|epilepsy|endometriosis|"
        r"high blood pressure|long covid|tinnitus|vertigo|sciatica)\b.*)",
        fmt("User has {x}"),
    ),
    (
        r"^my (?:doctor|doc|gp|neurologist|psychiatrist|dermatologist|cardiologist|therapist|"
        r"endocrinologist|rheumatologist|physician|specialist|allergist|oncologist) "
        r"(?:just |has )?(?:put|started) me on (?P<x>.+)",
        fmt("User takes {x}"),
    ),
    # work
    (
        rf"^(?:i work|{_I} {_ADV}working|{_IV} {_ADV}been working|{_IV} {_ADV}started) as "
        # "as a nurse now, at the Charité"
        r"(?P<a>an? )?(?P<x>.+?)(?:,? (?:now|currently|these days))?,? (?:at|for) (?P<y>.+)",
        _job_and_employer,
    ),
    (rf"^{_I} (?P<a>an? )(?P<x>[\w -]*?(?:{JOB})s?) (?:at|for|with) (?P<y>.+)", _job_and_employer),
    (
        rf"^(?:i {_ADV}work|{_I} {_ADV}(?:working|employed)|{_IV} {_ADV}been working) "
        r"(?:(?:full|part)[- ]time )?(?P<v>at|for|as|on|by) (?P<x>.+)",
        lambda m: (
            [f"User works {'at' if m['v'].lower() == 'by' else m['v'].lower()} {x}"]
            if (x := obj(m["x"]))
            else []
        ),
    ),
    (
        rf"^{_IV} {_ADV}(?:joined|started (?:a new job |working )?at|got a (?:new )?job at|"
        r"started a new (?:job|role|position) at|been hired by|accepted an offer from) "
        # "so I joined in": a particle, no employer
        r"(?!(?:in|up|them|him|her|it|us|too|as well)\b)(?P<x>.+)",
        fmt("User works at {x}"),
    ),
    # "joining shopify as a PM" (a new job, named lowercase or not)
    (
        rf"^(?:{_I} |i )?{_ADV}(?:joining|starting at) "
        r"(?P<y>(?!(?:the|a|an|my|our|this|that|his|her|their)\b)[\w.&'-]+(?: [\w.&'-]+)?) as "
        r"(?P<a>an? )?(?P<x>.+)",
        lambda m: [f"User works at {m['y']}", *_job(m)],
    ),
    # a first day or week in a job, or the last one at an employer
    (
        rf"^(?:{_I} )?(?:starting|started|begin(?:ning)?|began) (?:on |this |next )?"
        rf"(?:{WEEKDAYS}|tomorrow|today|"
        r"next week|this week|in (?:a|two) weeks?) as (?P<a>an? )?(?P<x>.+?) at (?P<y>.+)",
        _job_and_employer,
    ),
    # "since I started at Kestrel Robotics as an operations coordinator"
    (
        rf"^(?:since |ever since )?{_IV} {_ADV}(?:started|joined) (?:at |with )?"
        r"(?P<y>(?-i:[A-Z])[\w.&'-]*(?: (?-i:[A-Z])[\w.&'-]*)*) as (?P<a>an? )?"
        r"(?P<x>.+?)(?= i\b| we\b|,|$)",
        lambda m: [f"User works at {m['y']}", *_job(m)],
    ),
    # "starting as a junior ux designer at plumline next month": a job about to begin
    (
        rf"^(?:{_I} |i )?{_ADV}(?:starting|about to start|start) "
        r"(?:a new job |work |my new job )?as "
        r"(?P<a>an? )?(?P<x>.+?) (?:at|with) (?P<y>.+)",
        _job_and_employer,
    ),
    (
        r"^(?:my )?first (?:day|week|month) as (?P<a>an? )?(?P<x>.+?)"
        r"(?: at (?P<y>.+?))?(?: (?:is |was )?(?:done|over|complete|finished|went well))?$",
        lambda m: _job_and_employer(m) if m["y"] else _job(m),
    ),
    (
        r"^(?:my )?last day (?:at|with) (?P<x>.+?) (?:was|is)\b",
        fmt("User no longer works at {x}"),
    ),
    # "I do payroll at Coldharbour Brewing", "I do IT support for a primary school"
    (
        rf"^i {_ADV}do (?P<x>(?:[\w-]+ ){{0,2}}(?:support|payroll|admin|accounts|accounting|"
        r"marketing|sales|hr|design|research|consulting|tutoring|nursing|engineering|"
        r"development|testing|qa|ops|devops|security|finance|bookkeeping|recruiting|logistics|"
        r"customer service|social media|pr|comms|data entry|procurement)) (?P<v>at|for) (?P<y>.+)",
        lambda m: (
            [f"User does {m['x']} {m['v'].lower()} {y}"]
            + (
                [f"User works at {y}"]
                if m["v"].lower() == "at" and _PLACE_START.match(m["y"])
                else []
            )
            if (y := obj(m["y"]))
            else []
        ),
    ),
    # "I work mostly night shifts"
    (
        rf"^i {_ADV}work {_ADV}(?P<x>(?:the )?(?:night|day|early|late|evening|morning|weekend|"
        r"double|split|graveyard|overnight) shifts?\b.*)",
        fmt("User works {x}"),
    ),
    (
        rf"^i {_ADV}(?:got|was|'ve been|have been) hired (?:at|by) (?P<x>.+)",
        fmt("User works at {x}"),
    ),
    # a promotion is the new job: it takes the occupation's place
    (
        rf"^i {_ADV}(?:got|was|'ve been|have been) (?:promoted (?:to )?|made (?=an? |the ))"
        # "I got promoted at work!" names no job
        r"(?!(?:at|in|again|today|yesterday|last|this|finally)\b)(?P<x>.+)",
        fmt("User works as {x}"),
    ),
    (
        r"^my (?:job|role|position|title|profession) is (?:now |actually )?(?P<x>.+)",
        fmt("User works as {x}"),
    ),
    # tools
    # "I do all my editing in Sublime Text": the tool the work is done in
    (
        r"^(?P<s>i|we) do (?:all|most|almost all|nearly all) (?:of )?(?:my|our) [\w-]+ "
        r"(?:in|on|with) (?P<x>.+)",
        lambda m: (
            [f"{_subject(m['s'])} uses {x}"]
            if (x := obj(m["x"])) and (tool_name(x) or x[:1].isupper())
            else []
        ),
    ),
    # "I am writing a small Clojure library for parsing tide tables": a project
    (
        rf"^(?P<s>i|we)(?:'m|'re| am| are) {_ADV}(?P<v>writing|building|developing|making|"
        r"working on) (?P<x>(?:an?|my|our) (?:[\w+#.-]+ ){0,3}(?:library|app|tool|game|website|"
        r"plugin|bot|cli|package|novel|book|thesis|dissertation|compiler|framework|api|service|"
        r"extension|startup|podcast|blog)\b.*)",
        lambda m: [f"{_subject(m['s'])} is {m['v'].lower()} {x}"] if (x := obj(m["x"])) else [],
    ),
    (
        rf"^{_S} {_ADV}(?:uses?|rely on|relies on|work with|code in|write) (?P<x>.+)",
        lambda m: [f"{_subject(m['s'])} uses {x}"] if (x := obj(m["x"])) else [],
    ),
    (
        rf"^(?P<s>i|we)(?:'m|'re| am| are) {_ADV}(?:using|on) (?P<x>.+)",
        lambda m: (
            [f"{_subject(m['s'])} uses {x}"]
            if (x := obj(m["x"]))
            and (m.group(0).lower().split()[1:2] != ["on"] or tool_name(x) or _DEVICE.match(x))
            else []
        ),
    ),
    # "..., back to vim": a tool returned to; "went back to whole milk": a switch
    (
        rf"^(?:{_I} |i'?ve gone |i went |went )?(?:back to|back on) (?P<x>.+)",
        lambda m: (
            [f"User uses {x}"]
            if (x := obj(m["x"])) and tool_name(x)
            else [f"User switched to {x}"]
            if x and "went" in m.group(0).split()[:2] and not _NOT_RETURNED.match(x)
            else []
        ),
    ),
    (
        rf"^{_I} {_ADV}(?:(?:studying|revising|cramming) for (?P<x>.+)|(?:preparing|prepping) "
        r"for (?P<e>(?:the|my|an?) (?:[\w-]+ ){0,3}(?:exams?|test|interview|boards|bar|finals|"
        r"certification|marathon|race)\b.*))",
        lambda m: (
            [f"User is {'studying' if m['x'] else 'preparing'} for {x}"]
            if (x := obj(m["x"] or m["e"]))
            else []
        ),
    ),
    (
        # a class only with its schedule or venue: "started a new class" is code
        rf"^(?:{_IV} {_ADV}(?:started|began|take|am taking|am starting)|"
        rf"{_I} {_ADV}(?:taking|starting)) "
        r"(?P<x>an? (?:[\w-]+ ){0,3}(?:course|lessons?|workshop|bootcamp|apprenticeship)\b.*"
        rf"|an? (?:[\w-]+ ){{0,3}}class(?:es)? (?=(?:on|every) |(?:{WEEKDAYS})s?\b|"
        r"at (?:the|a) (?:gym|studio|community|local)\b).*)",
        fmt("User takes {x}"),
    ),
    (
        rf"^(?:i {_ADV}(?:started|began) (?:learning|to learn)|{_I} {_ADV}learning) (?P<x>.+)",
        fmt("User is learning {x}"),
    ),
    (
        rf"^{_S} (?:have |'ve |just )?decided to (?P<x>.+)",
        lambda m: [f"{_subject(m['s'])} decided to {x}"] if (x := obj(m["x"])) else [],
    ),
    # preferences
    # "I've been seeing someone new, Anneliese, for about two months"
    (
        rf"^{_IV} {_ADV}(?:been |started )?(?:seeing|dating|going out with) (?:someone new,? |"
        r"(?:a|this) (?:guy|girl|woman|man|lad|lass) (?:called|named) )?"
        r"(?P<x>(?-i:[A-Z])[\w-]+)\b",
        fmt("User is dating {x}"),
    ),
    (rf"^{_I} (?:a )?(?:big |huge )?fan of (?P<x>.+)", fmt("User likes {x}")),
    (r"^i(?:'d| would) (?:much )?rather (?P<x>.+)", fmt("User prefers to {x}")),
    (
        r"^i (?P<adv>(?:(?:always|usually|generally|really|strongly|definitely|mostly|"
        r"totally|absolutely|now) )*)(?P<v>like|love|prefer|enjoy|hate|dislike|want|need|adore|"
        r"favou?r) (?P<x>.+)",
        # a bare "I need X" asks for something in this chat ("I need a rubric for ...")
        lambda m: [] if m["v"].lower() == "need" and not m["adv"] else _opinion(m),
    ),
    # a standing instruction: an imperative from now on, or asked to stop a habit
    (r"^please (?P<x>stop [a-z]+ing\b.*)", _instruction),
    # "pls use bullet points not paragraphs": a way of answering, against another
    (
        r"^(?:please )?(?P<x>(?:use|write|keep|reply|answer|respond|format) "
        r".+? (?:not|instead of|rather than) .+)",
        _instruction,
    ),
    (
        rf"^(?:{FROM_NOW_ON})[,:]? (?:please )?{_IMPERATIVE}(?P<x>.+)",
        _instruction,
    ),
    (
        rf"^(?:please )?(?P<x>(?:{_INSTRUCTION}) .+?),? (?:{FROM_NOW_ON})$",
        _instruction,
    ),
    (
        # a bare verb after it ("always answer in French"); not a dropped "I've"
        # ("always been interested in ...") or a motto ("never say never")
        r"^(?:please )?(?P<v>always|never) (?!mind\b|say never\b|give up\b)"
        r"(?!(?:been|had|was|were|loved|liked|wanted|felt|thought|knew|got|here|there|happy|"
        r"glad|ready|welcome|available|grateful|thankful|proud|sure|so|such|an?|the|fun|good|"
        r"great|nice|fine|up|down|in|on|at|a pleasure)\b)(?P<x>.+)",
        lambda m: (
            [f"User wants the assistant to {m['v'].lower()} {x}"] if (x := obj(m["x"])) else []
        ),
    ),
    # habits, possessions, relatives, the rest
    (
        r"^(?P<s>i|we) (?:(?:usually|often|always|still|also|regularly|now) )*(?P<v>drink|eat|"
        r"smoke|run|swim|cycle|bike|play|speak|read|drive|cook|meditate|walk|practi[cs]e|study|"
        r"teach|volunteer|climb|ski|surf|knit|paint|garden|bake|commute) (?P<x>.+)"
        # a commute: "I take the regional train from Zug to Lucerne"
        r"|^(?P<s2>i|we) (?:(?:usually|often|always|still|also|regularly|now) )*(?P<v2>take|"
        r"catch) (?P<x2>the (?:[\w-]+ ){0,2}(?:train|bus|tram|metro|subway|tube|ferry)\b.*)",
        lambda m: (
            [f"{_subject(m['s'] or m['s2'])} {third_person((m['v'] or m['v2']).lower())} {x}"]
            if (x := _route(m["x"] or m["x2"]))
            else []
        ),
    ),
    (r"^(?:i|we) (?:just )?sold (?P<x>.+)", fmt("User sold {x}")),
    (
        r"^(?:i|we) (?:just )?picked up (?P<x>an? (?!few\b|couple\b|bit\b|lot\b)"
        r"(?:used |new |second-hand )?.+)",
        fmt("User has {x}"),
    ),
    # "I have been vegetarian" is a state, not a possession
    (
        # not a state got into: "I got mixed up", "got confused", "got it wrong"
        r"^(?:i|we)(?:'ve| have)? (?:just )?(?:have|own|got|bought) (?!been\b)"
        # nor a past participle: "I have learned alot", "I've really enjoyed"
        r"(?!(?:\w+ly )?(?:\w{3,}ed|been|done|seen|gone|made|taken|given|known|found|become|"
        r"heard|met|read|said|told|won|written|kept|begun|grown|come|spent|felt|thought|hurt|"
        r"stuck|caught|bitten|stung|burnt)\b)"
        # nor a state got into or what one got that is no possession: "got lost",
        # "got around to", "got the idea from", "have a blast"
        r"(?!(?:not|back|home|there|up|ready|lost|it|that|this|them|wrong|sick|tired|bored|"
        r"used|around|the idea|a no|a yes|a call|a text|a message|an email|a letter|"
        r"(?:a|the) chance|news|word|lucky|the hang|a kick out of|the feeling|the impression|"
        r"a glimpse|a taste|(?:a|the) lot out of|into|a blast|fun|a (?:great|good|nice|lovely) "
        r"time|no doubt|no idea|time to|a question|a problem|an issue)\b)(?P<x>.+)",
        fmt("User has {x}"),
    ),
    (
        rf"^(?P<p>my) (?P<a>(?:{RELATIONS})(?: (?-i:[A-Z])[\w-]+)?) (?P<x>(?:is|was|works|lives|"
        r"loves|likes|has|plays|studies|goes|moved|just|recently|hates|owns|teaches|got)\b.+)",
        _relative_does,
    ),
    (r"^(?P<p>my|our) (?P<a>[\w' -]{1,40}?) (?P<v>is|are) (?P<x>.+)", _possessive),
    (rf"^(?:{_I}|i(?:'ve| have) been) (?P<x>an? (?!bit\b|little\b|tad\b|lot\b)\w.*)", _is_a),
    (
        rf"^(?:{_I}|i(?:'ve| have) been) (?:now )?"
        r"(?P<x>(?:(?:type [12]|mildly|severely|very) )?(?:vegan|vegetarian|"
        r"pescatarian|flexitarian|allergic to .+|(?:lactose|gluten) intolerant|left-handed|"
        r"colou?r ?blind|diabetic|pre-diabetic|asthmatic|epileptic|coeliac|celiac|autistic|"
        r"dyslexic|deaf|hard of hearing|anaemic|anemic))"
        rf"(?:,? (?:now|these days|nowadays))?(?=$|,|\s+(?:so|and|but|because|for|since|btw|"
        rf"by the way|fyi|lol|tbh|too|though|tho|myself)\b|\s+{_FOR_YEARS}\b)",
        fmt("User is {x}"),
    ),
    # "as a pharmacist I get asked ...": the job the clause speaks from
    (
        rf"^as (?P<a>an? )(?P<x>[\w -]*?\b(?:{JOB}))\b(?=,|\s+(?:i|we)\b)",
        fmt("User works as {a}{x}"),
    ),
)
# the sideways phrasings first: their patterns are narrower than the table's
RULES: tuple[Rule, ...] = tuple((re.compile(p, re.I), f) for p, f in INDIRECT + _TABLE)
