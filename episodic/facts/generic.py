"""A statement the user makes of themselves that no rule reads, kept in their words.

The rule table (`offline_rules`) reads the ways people state the facts it
knows by slot; what people say of their habits in other words ("i ride
horses", "I handle the online presence of our clients", "i farm honey bees")
it misses. Such a clause is kept as it stands, in the third person, when

- it is "I" and a verb in the present ("I ...", adverbs between read as
  adverbs), or "I'm the ..." ("I'm the maid of honor");
- its verb is not one of the conversation's ("I think", "I guess", "I hear
  ya"), a wish, a request or a modal (the table reads "I want", "I need"),
  and no "rarely" / "never" turns it around;
- what follows the verb carries a content word (not "it", "that", "so
  much"), asks nothing, has no second verb, and is short: a long clause is a
  story, not a fact.

Not kept: the past ("I dropped by the bakery", and on an agent's stream
"stopped the server") and "I'm ...-ing" ("I'm eating sushi for lunch"): on
real chats they are mostly the moment's, not the user's (measured on
REALTALK and the bench's dialogues, 2026-12-06). A dropped "I'm" before an
-ing verb is put back for the rule table to read ("learning spanish now").

A kept clause has no slot (`slots.parse_slot` finds none), so the merge adds
it; an ending or a correction that names its value still finds it by words.
"""

from __future__ import annotations

import re

from episodic.facts.chatter import is_passing_state
from episodic.facts.when import MONTHS, WEEKDAYS
from episodic.facts.wording import is_past, obj, third_person

MAX_WORDS = 12  # a longer clause is a story, not a fact

# verbs of the conversation, of the mind, of wishes: not facts about the user
_NOT_A_FACT_VERB = frozenset(
    "think thought guess mean meant know knew see wonder wondered hope hoped feel felt "
    "believe suppose bet remember forgot forget agree understand like liked love loved want "
    "wanted need needed ask asked say said tell told try tried wish wished appreciate "
    "apologize apologise promise swear doubt assume realize realise figured figure noticed "
    "heard was am is were be been can could would will should might must do did does don't "
    "didn't doesn't can't cannot won't wouldn't couldn't shouldn't just also really actually "
    "totally literally mean hate hated prefer preferred enjoy enjoyed care cared mind "
    "imagine imagined expect expected guessed thank thanks let made make get got "
    "go went come came look looked sound sounded seem seemed keep kept wait waited "
    "doing feeling getting going switching trying hoping wondering thinking looking "
    "planning gearing heading saying telling asking suggest suggests sure ll ve re may "
    "gotta gonna wanna even hear require request".split()
)
# what an object with nothing in it is made of
_EMPTY = (
    frozenset(
        "it its it's that this these those them they so much lot lots too very really right now "
        "today tonight back out up down stuff things thing one some any all more less well still "
        "again anyway though sure yet there here about on in at to for of with a an the and or "
        "forward "
        "but if just also mind way time day week month year weekend morning night last next ago "
        "their theirs themselves other".split()
    )
    | set(WEEKDAYS.split("|"))
    | set(MONTHS.split("|"))
)
# words that look like a verb and are none here (after "I", or opening a clause)
_NOT_A_VERB = frozenset(
    "bed red need seed speed feed weed breed shed sled wed hundred sacred naked wicked "
    "tired bored excited scared worried married stressed confused interested obsessed used "
    "supposed based red-eyed thing nothing something anything everything morning evening "
    "king ring spring string wing sibling ceiling wedding pudding during bring sing sting "
    "swing cling fling wring ding ping working living staying being unrelated related "
    "knackered stoked pumped gutted relieved annoyed exhausted thrilled amazed shocked "
    "surprised embarrassed overwhelmed".split()
)
# adverbs between the subject and its verb: "I primarily ski", "I'm honestly ..."
_ADVERB = (
    r"(?:[a-z]{2,}(?:ally|ively|ously|fully|ently|antly|ately|ily|ibly|ably|ually|edly|"
    r"ingly|arly|erly|ely)|just|also|already|now|only|still|always|never|often|sometimes|"
    r"mostly|mainly|hardly|highly|fully|kinda|honestly|really|first|almost|once)"
)
_ADVERBS = rf"(?:{_ADVERB} )*"
_SELDOM = re.compile(r"\b(?:rarely|seldom|hardly|barely|scarcely|never)\b", re.I)
# a verb of its own after an -ing word: the -ing word is a subject, not "I'm ..."
_FINITE = re.compile(
    r"\b(?:is|was|are|were|can|could|will|would|has|have|had|makes?|made|must|might|should|"
    r"seems?|sounds?|feels?|takes?|gives?|helps?|means?)\b"
)
# a request or a question inside what follows the verb: not a statement
_ASKS = re.compile(r"\b(?:can|could|would|will) (?:u|you)\b|\?|\bpls\b|\bplease\b", re.I)
_DROPPED = re.compile(rf"^{_ADVERBS}(?P<v>[a-z][a-z'-]+)\b(?P<rest>.*)$")
_I = re.compile(
    rf"^(?P<s>i'm|i am|i've|i have|i)\s+{_ADVERBS}(?P<v>[a-z]{{2,}})(?P<rest>(?:\s.*)?)$",
    re.I,
)


def dropped_subject(clause: str) -> str | None:
    """The clause with its dropped "I'm" back ("learning spanish now" ->
    "I'm learning spanish now"), or None. Only an -ing verb is read
    so: a past verb without its subject is as often an agent's step of the
    moment ("stopped the server") as a life event, and the rule table restores
    those it knows (`offline_extract._NO_SUBJECT`); an -ing word with a verb of
    its own after it is the subject ("Making tiramisu was fun")."""
    low = clause.casefold()
    m = _DROPPED.match(low)
    if m is None or m["v"] in _NOT_A_VERB or m["v"] in _NOT_A_FACT_VERB:
        return None
    if m["v"].endswith("ing") and len(m["v"]) > 5 and not _FINITE.search(m["rest"]):
        return f"I'm {clause}"
    return None


def first_person_fact(clause: str) -> str | None:
    """The clause as a fact about the user, or None (see the module)."""
    m = _I.match(clause)
    if m is None:
        return None
    if re.fullmatch(_ADVERB, m["v"].casefold()):
        return None  # "I generally don't ...": an adverb where the verb would be
    if _SELDOM.search(m.group(0)[: m.start("v")]):
        return None  # "I rarely leave the house": the adverb turns the verb around
    s, v, rest = m["s"].casefold(), m["v"].casefold(), m["rest"].strip()
    if (
        v in _NOT_A_FACT_VERB
        or v in _NOT_A_VERB
        or v.endswith(("n't", "'t"))  # a negation: not what the user does
        or not rest
        or _ASKS.search(rest)
        or _FINITE.search(rest)  # "I'm making tiramisu was ...": not one statement
    ):
        return None
    if is_passing_state(f"{v} {rest}"):
        return None  # "I'm knackered", "I'm so excited about ..."
    x = obj(rest)
    if x is None or len(x.split()) + 1 > MAX_WORDS:
        return None
    if not any(len(w) >= 3 and w not in _EMPTY for w in re.findall(r"[\w'-]+", x.casefold())):
        return None
    if s in ("i'm", "i am"):
        # "I'm the maid of honor"; "I'm eating sushi" is the moment's, not the user's
        return f"User is the {x}" if v == "the" else None
    if s in ("i've", "i have") or is_past(v):
        return None  # an event: "I dropped by the bakery" is the day's, not the user's
    # "i lives in america" (a typo) already has its -s
    verb = v if v.endswith("s") and not v.endswith(("ss", "us")) else third_person(v)
    return f"User {verb} {x}"
