"""The salience response model: an integer 1-10, bounded one-line fields, and its offline answer."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from episodic.salience import EpisodeTurn, SalienceRating, episode_features

TURNS = [
    EpisodeTurn("user", "user-question", "the nightly job failed again, why?"),
    EpisodeTurn("tool", "tool-error", "Traceback: TimeoutError"),
    EpisodeTurn("assistant", "assistant-answer", "The DB timeout is 5s; let's raise it to 30s."),
    EpisodeTurn("user", "user-correction", "No, the timeout is fine; the index is missing."),
]


@pytest.mark.parametrize("bad", [0, 11, "7", 7.5])
def test_rating_accepts_only_integers_1_to_10(bad: object) -> None:
    with pytest.raises(ValidationError):
        SalienceRating.model_validate({"score": bad, "rationale": "", "summary": ""}, strict=True)


def test_rating_fields_are_bounded_and_one_line() -> None:
    ok = SalienceRating(score=5, rationale="a\nb", summary="one\n line")
    assert (ok.rationale, ok.summary) == ("a b", "one line")
    with pytest.raises(ValidationError):
        SalienceRating(score=5, rationale="r", summary="s" * 201)
    with pytest.raises(ValidationError):
        SalienceRating(score=5, rationale="r" * 601, summary="s")


def test_offline_answer_needs_features() -> None:
    with pytest.raises(ValueError, match="features"):
        SalienceRating.offline_answer({})
    answer = SalienceRating.offline_answer(
        {"features": episode_features(TURNS).as_dict(), "summary": "x\ny"}
    )
    assert answer.summary == "x y"
