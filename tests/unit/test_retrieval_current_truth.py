"""The pure parts of current truth first (issue 31): words every item shares
rank nothing; a turn stating a superseded value is told from the turn that
replaced it."""

from __future__ import annotations

from episodic.retrieval import StaleValues, rarer_terms

FACTS = ["User lives in Amsterdam", "User loves the canals", "User works as a data analyst"]


def test_a_word_every_fact_holds_leaves_the_query() -> None:
    assert rarer_terms("where does the user live", FACTS).split() == [
        "where",
        "does",
        "the",
        "live",
    ]


def test_too_few_rows_to_tell_keep_the_query() -> None:
    assert rarer_terms("where does the user live", FACTS[:2]) == "where does the user live"


STALE = [
    ("User lives in Lisbon", "User lives in Amsterdam"),
    ("User drives a Toyota Corolla to work every day", None),
]


def test_the_superseded_statement_is_stale() -> None:
    assert StaleValues(STALE).stated_by("user: Hi! I live in Lisbon and I work as a data analyst.")
    assert StaleValues(STALE).stated_by("user: I drive a Toyota Corolla to work every day.")


def test_the_replacing_statement_and_passing_mentions_are_current() -> None:
    assert not StaleValues(STALE).stated_by(
        "user: I moved to Amsterdam from Lisbon, I live there now."
    )
    assert not StaleValues(STALE).stated_by("user: I sold the Corolla and bought a Tesla Model 3.")
    assert not StaleValues(STALE).stated_by("user: where do you live?")
    assert not StaleValues([]).stated_by("anything")
