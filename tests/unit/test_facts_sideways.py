"""Issue 28 item 4: facts said sideways, in passing, or as a correction of a
stored fact, in phrasings none of the scenario cases use (the rules are meant
to hold for the kind of phrasing, not for the cases' words)."""

from __future__ import annotations

import pytest

from episodic.facts.correction import contrast, corrected_fact
from episodic.facts.negation import is_negation_of
from episodic.facts.offline_extract import _turn_facts
from episodic.facts.offline_merge import merge_one


def facts(text: str) -> list[str]:
    return [f for f, _ in _turn_facts(text)]


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        # a home by its kind
        ("I'm renting a room in Leipzig now.", "User lives in Leipzig"),
        ("got a tiny flat in Porto last spring!", "User lives in Porto"),
        # a job by its frame or its word's ending
        ("I'm a wheelwright, mostly carts.", "User works as a wheelwright"),
        ("I'm the lead choreographer there.", "User works as the lead choreographer"),
        ("I took a job as a courier.", "User works as a courier"),
        ("Dogs all day on top of my day job as a dentist.", "User works as a dentist"),
        # use over time, a taste that moved or ended
        ("I've been using Obsidian for notes since 2019.", "User uses Obsidian for notes"),
        ("we've had a Netflix account for ages", "Team has a Netflix account"),
        ("honestly I've lost interest in chess", "User lost interest in chess"),
        ("oat milk is my new go-to", "User now prefers oat milk"),
        # a trip and its end
        ("I'm heading to Lisbon next week.", "User is travelling to Lisbon"),
        ("the honeymoon got called off", "User's honeymoon is cancelled"),
        # a dropped subject, a compound subject with the user
        ("sold the Corolla, I bike now", "User sold the Corolla"),
        ("my wife and I are moving to Oslo", "User is planning to move to Oslo"),
        ("Tom and I live in Leeds", "User lives in Leeds"),
        # in passing
        ("My Toyota keeps stalling, any ideas?", "User has a Toyota"),
        ("Any tips for a gecko? Mine's called Fig.", "User has a gecko named Fig"),
        ("everyone thinks I'm shy but I'm really not", "User is not shy"),
        ("how do I theme my neovim?", "User uses neovim"),
        # lowercase places, not idioms
        ("i'm in gdansk so it's cold", "User lives in gdansk"),
    ],
)
def test_sideways_phrasings(text: str, fact: str) -> None:
    assert fact in facts(text)


@pytest.mark.parametrize(
    "text",
    [
        "I keep forgetting my keys.",
        "I'm on holiday now.",
        "i'm in trouble so help",
        "I'm going to try it next week.",
        "my sister got a job as a midwife",
        "Priya and I have been together two years.",
        "stopped the server and restarted it",
    ],
)
def test_look_alikes_give_no_such_fact(text: str) -> None:
    got = facts(text)
    assert not any(
        f.startswith(("User lives", "User works", "User keeps", "User uses", "User is travelling"))
        or "together" in f
        or "server" in f
        for f in got
    ), got


def test_ending_a_taste_ends_what_was_liked() -> None:
    assert is_negation_of("User has gone off rooibos", "User drinks rooibos every evening")
    assert not is_negation_of("User has gone off rooibos", "User drinks genmaicha")


def test_a_long_stem_meets_the_longer_ones_it_starts() -> None:
    assert is_negation_of("User asked to forget about the diabetes", "User is type 1 diabetic")
    # short stems do not: "car" is not "cardiff"
    assert not is_negation_of("User sold the car", "User lives in Cardiff")


def test_a_contrast_names_the_old_value_of_a_stored_fact() -> None:
    assert contrast("he works at Siemens, not Bosch") == "User corrected Bosch to Siemens"
    # a lowercase value only when the turn owns up to a slip
    assert contrast("I drink tea, not coffee") is None
    assert contrast("I drink tea, not coffee", signal=True) == "User corrected coffee to tea"
    assert contrast("it was Monday, not Tuesday") is None


def test_a_correction_rewrites_the_fact_that_holds_the_old_value() -> None:
    new = "User corrected postgres to MariaDB 10.6"
    old = "Team's app's database is Postgres 14"
    assert corrected_fact(new, old) == "Team's app's database is MariaDB 10.6"
    assert corrected_fact(new, "User lives in Lyon") is None
    event, cid = merge_one(new, None, [(1, "User lives in Lyon", None), (2, old, None)])
    assert (event, cid) == ("UPDATE", 2)


@pytest.mark.timeout(60)  # a hang guard: the rules backtracked for minutes on this
def test_a_run_of_whitespace_reads_as_one_space() -> None:
    pasted = "I live in" + " " * 100_000 + "Leipzig.\n\t\t\tI work as a  courier."
    assert facts(pasted) == facts("I live in Leipzig.\nI work as a courier.")
    assert "User lives in Leipzig" in facts(pasted)
