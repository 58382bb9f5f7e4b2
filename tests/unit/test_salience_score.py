"""score_episode through the real offline and fake providers, and the response model."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel, ValidationError

from episodic.errors import LLMTransientError
from episodic.llm.base import Message
from episodic.llm.fake import FakeProvider
from episodic.llm.offline import OfflineProvider
from episodic.salience import (
    EpisodeTurn,
    SalienceRating,
    episode_features,
    offline_salience,
    score_episode,
)

TURNS = [
    EpisodeTurn("user", "user-question", "the nightly job failed again, why?"),
    EpisodeTurn("tool", "tool-error", "Traceback: TimeoutError"),
    EpisodeTurn("assistant", "assistant-answer", "The DB timeout is 5s; let's raise it to 30s."),
    EpisodeTurn("user", "user-correction", "No, the timeout is fine; the index is missing."),
]
NOW = datetime(2024, 5, 17, tzinfo=UTC)


def test_offline_provider_scores_with_the_offline_formula() -> None:
    result = score_episode(OfflineProvider(), TURNS, now=NOW)
    expected, rationale = offline_salience(episode_features(TURNS))
    assert result.source == "offline"
    assert result.error is None
    assert result.score == expected
    assert result.rationale == rationale
    # extractive: the longest user turn (no vectors)
    assert result.summary == "No, the timeout is fine; the index is missing."


def test_model_answer_gives_score_and_summary() -> None:
    seen: list[list[Message]] = []

    def handler(messages: list[Message], model: type[BaseModel], ctx: dict[str, Any]) -> Any:
        seen.append(messages)
        return {"score": 8, "rationale": "a root cause was found", "summary": "Missing index\n"}

    result = score_episode(FakeProvider(handler), TURNS, domain="sre", now=NOW)
    assert (result.score, result.source, result.error) == (8, "fake-v1", None)
    assert result.summary == "Missing index"
    assert "critical production incident" in seen[0][-1]["content"]
    assert "tool error: Traceback: TimeoutError" in seen[0][-1]["content"]


def test_model_without_summary_falls_back_to_extractive() -> None:
    provider = FakeProvider(lambda m, r, c: {"score": 3, "rationale": "r", "summary": ""})
    result = score_episode(provider, TURNS, now=NOW)
    assert result.score == 3
    assert result.summary == "No, the timeout is fine; the index is missing."


def test_invalid_answers_end_in_recorded_offline_fallback() -> None:
    provider = FakeProvider(lambda m, r, c: {"score": 11, "rationale": "too much"}, retries=1)
    result = score_episode(provider, TURNS, now=NOW)
    assert result.source == "offline-fallback"
    assert result.error is not None and "SalienceRating" in result.error
    assert result.score == offline_salience(episode_features(TURNS))[0]
    assert provider.usage.calls == 2  # the first answer and one re-ask


def test_provider_fault_falls_back_too() -> None:
    def handler(messages: list[Message], model: type[BaseModel], ctx: dict[str, Any]) -> Any:
        raise LLMTransientError("fake", "fake-v1", "503 after retries")

    result = score_episode(FakeProvider(handler), TURNS, now=NOW)
    assert result.source == "offline-fallback"
    assert result.error is not None and "503" in result.error


def test_vectors_feed_novelty_and_the_central_summary() -> None:
    vectors = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.3, 0.0], [1.0, -0.3, 0.0]])
    result = score_episode(
        OfflineProvider(), TURNS, vectors=vectors, prior_centroids=[[0.0, 1.0, 0.0]], now=NOW
    )
    assert result.features.novelty is not None and result.features.novelty > 0.1
    assert "novelty" in result.rationale
    assert result.summary == "the nightly job failed again, why?"


def test_empty_episode_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        score_episode(OfflineProvider(), [], now=NOW)


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
