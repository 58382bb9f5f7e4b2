"""The first-person fallback (episodic/facts/generic.py): what the user says of
themselves that no rule reads is kept in their words, and nothing else is."""

from __future__ import annotations

import pytest

from episodic.facts.generic import dropped_subject, first_person_fact
from episodic.facts.offline_extract import extract_facts_of


@pytest.mark.parametrize(
    ("clause", "fact"),
    [
        ("I run a small bakery in Leeds", "User runs a small bakery in Leeds"),
        (
            "i watch crime dramas and war documentaries",
            "User watches crime dramas and war documentaries",
        ),
        ("I'm the maid of honor", "User is the maid of honor"),
        ("I primarily ski recreationally", "User skis recreationally"),
    ],
)
def test_a_statement_about_the_user_is_kept(clause: str, fact: str) -> None:
    assert first_person_fact(clause) == fact


@pytest.mark.parametrize(
    "clause",
    [
        "I think so",  # the conversation's verbs
        "I guess we'll see",
        "I tried it",  # an object with nothing in it
        "I'm looking forward to it",
        "I changed my mind",
        "I'm so excited about the launch",  # a passing state
        "i only get like 2 hrs, can you help",  # a request inside
        "I went over every single one of the forty-two open tickets in the backlog today",
        "I dropped by the bakery",  # an event of the day
        "I absolutely agree",  # an adverb, then a verb of the conversation
        "I haven't flown recently",
        "I'm doing well, thanks for asking",
        "I'm eating sushi for lunch",  # the moment's, not the user's
        "i rarely leave the house",  # the adverb turns the verb around
        "I may want to eat there soon",
    ],
)
def test_chatter_is_not_a_fact(clause: str) -> None:
    assert first_person_fact(clause) is None


def test_a_dropped_subject_is_put_back_before_an_ing_verb_only() -> None:
    assert dropped_subject("studying for the bar exam") == "I'm studying for the bar exam"
    for clause in (
        "stopped the server and restarted it",  # a step of the moment, not a life event
        "booked flights to rome for may",  # a past verb: the rule table's to restore
        "making tiramisu was a delight",  # the -ing word is the subject
        "wedding plans are chaos",
        "knackered lol",
        "working for the weekend",
    ):
        assert dropped_subject(clause) is None, clause


def test_the_rule_table_decides_first() -> None:
    # a rule's reading wins over the fallback's ("I live in" is residence)
    assert extract_facts_of("I live in Leeds") == ["User lives in Leeds"]
    # and a question gives nothing, with or without a subject
    assert extract_facts_of("booked flights yet?") == []
