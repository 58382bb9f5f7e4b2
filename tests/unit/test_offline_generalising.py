"""Issue 28: the offline extractor's general rules (endings, replacements,
corrections, chatter, relative dates), on sentences that are in no scenario
case: each checks a rule, not a case (the one-sentence rules are in
test_facts_extract's tables)."""

from __future__ import annotations

import pytest

from episodic.facts import is_negation_of, merge_one, offline_extract
from episodic.facts.offline_extract import extract_sentence
from episodic.facts.replacement import replaced_candidate, replaced_value
from tests.unit.test_facts_support import turn


def test_an_event_keeps_its_date_and_a_state_drops_it() -> None:
    assert extract_sentence("I moved to Kyoto last week") == "User moved to Kyoto last week"
    assert extract_sentence("I work at Wayne Enterprises since this Friday") == (
        "User works at Wayne Enterprises"
    )


@pytest.mark.parametrize(
    ("said", "fact"),
    [
        (["My son's name is Eli.", "Oops, it's Ely with a y."], "User's son's name is Ely"),
        (["I live in Vigo.", "Sorry, I meant Lugo, not Vigo."], "User lives in Lugo"),
        (["I'm 41.", "No wait, make that 42."], "User is 42 years old"),
    ],
)
def test_a_correction_replaces_the_last_fact(said: list[str], fact: str) -> None:
    facts = offline_extract([turn(i, text) for i, text in enumerate(said, start=1)])
    assert facts == [(fact, [1, 2])]


@pytest.mark.parametrize(
    "second",
    ["No, it's Thursday.", "Actually it's fine.", "It's Lugo.", "I meant Lugo, not Porto."],
)
def test_what_is_not_a_correction(second: str) -> None:
    facts = offline_extract([turn(1, "I live in Vigo."), turn(2, second)])
    assert ("User lives in Vigo", [1]) in facts


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("User broke up with Priya", "User's boyfriend is Priya"),
        ("User divorced Jo", "User is married to Jo"),
        ("User is no longer a student", "User is a student"),
        ("User asked to forget that their gym is FitCo", "User's gym is FitCo"),
        ("User unsubscribed from The Guardian", "User has a subscription to The Guardian"),
        ("User moved out of Leeds", "User lives in Leeds"),
    ],
)
def test_endings_end_what_they_name(new: str, old: str) -> None:
    assert is_negation_of(new, old)
    assert merge_one(new, None, [(1, old, None)]) == ("DELETE", 1)


def test_a_named_replacement_updates_the_fact_it_names() -> None:
    assert replaced_value("Team uses Zoom instead of Meet") == "Meet"
    assert replaced_value("User prefers trains over planes") == "planes"
    cands = [(1, "User uses Dropbox for backups", None), (2, "User lives in Oslo", None)]
    assert merge_one("User replaced Dropbox with iCloud", None, cands) == ("UPDATE", 1)
    # what it replaced is not there: news, not a replacement
    assert merge_one("Team uses Zoom instead of Meet", None, cands[1:]) == ("ADD", None)


def test_a_changed_preference_updates_the_only_preference() -> None:
    one = ["User prefers window seats", "User lives in Oslo"]
    assert replaced_candidate("User now prefers aisle seats", one) == 0
    two = [*one, "User prefers green tea"]
    # the same kind of thing ("seats") tells which preference changed
    assert replaced_candidate("User now prefers aisle seats", two) == 0
    assert replaced_candidate("User now prefers aisle seats", ["User books window seats"]) == 0
    other = ["User prefers the front row", "User lives in Oslo", "User prefers green tea"]
    assert replaced_candidate("User now prefers aisle seats", other) is None  # which? a guess
    assert replaced_candidate("User prefers aisle seats", one) is None  # no change said


def test_preferring_a_known_tool_fills_its_kind() -> None:
    cands = [(1, "User prefers Sublime for notes", None)]
    assert merge_one("User switched to Neovim", None, cands) == ("UPDATE", 1)
