"""Normalisation, slots and negation: the offline merge's eyes."""

from __future__ import annotations

import pytest

from episodic.facts import Slot, is_negation_of, merge_one, normalize, parse_slot, slot_of


def test_normalize() -> None:
    assert normalize("  The User's   dog, Rex!  ") == "users dog rex"
    assert normalize("User lives in Paris.") == normalize("user lives in paris")


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("User lives in Paris", ("user", "residence"), "paris"),
        ("User moved to Berlin last week", ("user", "residence"), "berlin"),
        ("I live in New York City with my wife", ("user", "residence"), "new york city"),
        ("User has a dog named Rex", ("user", "pet:rex"), "dog"),
        ("My dog's name is Rex", ("user", "pet:rex"), "dog"),
        ("User works at Acme since 2020", ("user", "employer"), "acme"),
        ("User works as a nurse", ("user", "occupation"), "nurse"),
        ("Team uses Postgres", ("team", "database"), "postgres"),
        ("We switched from MySQL to PostgreSQL", ("team", "database"), "postgres"),
        ("we use Jenkins for CI", ("team", "ci"), "jenkins"),
        ("we use Airflow for scheduling", ("team", "tool-for:scheduling"), "airflow"),
        ("User loves sushi", ("user", "opinion:sushi"), "+"),
        ("User hates sushi", ("user", "opinion:sushi"), "-"),
        ("User's favorite color is blue", ("user", "favorite color"), "blue"),
        ("User is 34 years old", ("user", "age"), "34"),
        (
            "User teaches 7th grade science at lincoln middle school",
            ("user", "occupation"),
            "7th grade science teacher",
        ),
        ("User has a pixel 6", ("user", "phone"), "pixel"),
        ("User has an iPhone 15", ("user", "phone"), "iphone"),
    ],
)
def test_slots(text: str, slot: tuple[str, str], value: str) -> None:
    parsed = parse_slot(text)
    assert parsed is not None
    assert (parsed.slot, parsed.value) == (Slot(*slot), value)


@pytest.mark.parametrize(
    "text",
    ["Rex died", "User is planning to visit Japan", "hello", "User teaches yoga on weekends"],
)
def test_no_slot(text: str) -> None:
    assert slot_of(text) is None


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        ("Rex died last week", "User has a dog named Rex", True),
        ("User no longer lives in Paris", "User lives in Paris", True),
        ("User no longer lives in Paris", "User lives in Berlin", False),
        ("User sold their car", "User has a red car", True),
        ("Team stopped using MySQL", "Team uses MySQL", True),
        ("User no longer smokes", "User smokes", True),
        ("User doesn't eat meat anymore", "User eats meat", True),
        ("User left Acme", "User works at Acme", True),
        ("User stopped smoking", "User no longer smokes", False),
        ("User moved to Berlin", "User lives in Paris", False),
        ("Rex died last week", "User lives in Paris", False),
    ],
)
def test_negation(new: str, old: str, expected: bool) -> None:
    assert is_negation_of(new, old) is expected


def test_offline_merge_order_negation_before_near_duplicate() -> None:
    # the two texts embed close; a cosine NOOP here would lose the ending
    same = [1.0, 0.0]
    cands = [(1, "User lives in Paris", same)]
    assert merge_one("User no longer lives in Paris", same, cands) == ("DELETE", 1)
    assert merge_one("User moved to Paris", [0.0, 1.0], cands) == ("NOOP", 1)
    assert merge_one("User is fond of Paris", same, cands) == ("NOOP", 1)
    # a near neighbour that fills another slot is not a duplicate
    assert merge_one("User enjoys Paris in spring", same, cands) == ("ADD", None)
    assert merge_one("User plays chess", [0.0, 1.0], cands) == ("ADD", None)


def test_a_plan_rescheduled_moves_its_time_and_nothing_else() -> None:
    from episodic.facts.offline_merge import offline_merge

    trip = "User is planning a trip to japan in april with their boyfriend leo"
    dentist = "User's dentist is Dr. Lee"
    context = {
        "existing": [{"text": trip}, {"text": dentist}],
        "new": [
            {"text": "User rescheduled japan to october", "candidates": [1, 2]},
            {"text": "User rescheduled the dentist to friday", "candidates": [2]},
        ],
    }
    moved, dentist_kept = offline_merge(context)
    assert (moved["event"], moved["id"]) == ("UPDATE", 1)
    assert moved["text"] == "User is planning a trip to japan in october with their boyfriend leo"
    assert dentist_kept["event"] == "ADD" and dentist_kept["id"] is None
