"""Clauses that look like facts but are about the conversation or the moment.

- a conversation act: what the user is about to do in this chat ("I will
  paste it below", "I'll send you the file", "I'm going to check that") is
  not something to remember about them;
- a fact that speaks to the listener ("User loves when you try something
  new") is about this chat, and its "you" means nothing once stored;
- a passing state: how someone feels or where they are right now ("my
  manager is thrilled about the launch", "my sister is busy today") is not a
  lasting fact about them.
"""

from __future__ import annotations

import re

# the object of "will ..." / "planning to ...", once in the third person
_CONVERSATION_ACT = re.compile(
    r"^(?:(?:just|quickly|also|then|first) )*(?:paste|send|share|upload|attach|forward|post|"
    r"copy|check|look|try|test|reply|answer|explain|show|give|write|ask|tell|"
    r"get back|let (?:you|them) know|think about|see|be right back|brb|do (?:it|that|this))\b"
    # a thing of this chat: "definitely add it to their list", "have to look into that"
    r"|^(?:[\w']+ ){0,4}(?:it|that|this|them|those|these)\b"
    r"|^(?:(?:definitely|certainly|surely|probably|also|just) )*(?:have (?:a blast|fun|"
    r"a (?:great|good|nice|lovely) time)|stay (?:home|in)|keep .+ in mind|admit|"
    r"do (?:my|their|our) best|keep (?:doing|trying|going|pushing|spreading)|come over)\b"
    # "I will contact the harbour one", "I will stick to a book then": an option
    # of this chat's answer taken
    r"|^.*\b(?:the|that|this|first|second|last) (?:[\w-]+ )?one$|^.*\bthen$"
    # "I'll take conditioner recommendations too": an answer taken from this chat
    r"|^take (?:[\w-]+ )?(?:recommendations|suggestions|advice|ideas|tips|options)\b",
    re.I,
)
# what follows "is" / "are" when it only says how someone is right now
_PASSING_STATE = re.compile(
    r"^(?:(?:so|very|really|super|quite|pretty|a bit|a little|totally|absolutely|just|"
    r"also|still) )*(?:thrilled|excited|happy|glad|pleased|delighted|sad|upset|angry|mad|"
    r"annoyed|worried|nervous|anxious|stressed|tired|exhausted|busy|sick|ill|bored|proud|"
    r"disappointed|frustrated|furious|curious|confused|surprised|impressed|relieved|"
    r"okay|ok|fine|late|away|out|back|here|there|online|offline|on (?:vacation|holiday|leave)|"
    # worn out, said of oneself or one's head ("my brain is fried")
    r"fried|frazzled|overwhelmed|swamped|slammed|knackered|shattered|wrecked|drained|"
    r"burn[et] out|mush|toast|"
    # a thing's trouble of the moment ("my pixel 6 battery is dead by lunchtime")
    r"dead|dying|broken|cracked|flat|stuck|frozen|acting up|"
    # a body's complaint of the moment ("my tendons are grumpy")
    r"grumpy|sore|achy|aching|killing me|hurting|stiff|swollen)\b",
    re.I,
)


# "you" in a stored fact means nothing: "User loves when you try something new",
# "User has 2 other options for you", "will keep you posted"
_ADDRESSED = re.compile(r"\b(?:you|your|yours|yourself|ya)\b", re.I)


def addresses_listener(fact: str) -> bool:
    """True when `fact` speaks to whoever the user was talking to."""
    return _ADDRESSED.search(fact) is not None


def is_conversation_act(action: str) -> bool:
    """True when `action` (what the user will do) is a step of this chat."""
    return _CONVERSATION_ACT.match(action.strip()) is not None


def is_passing_state(predicate: str) -> bool:
    """True when `predicate` (what follows "is") is a mood or a whereabouts."""
    return _PASSING_STATE.match(predicate.strip()) is not None
