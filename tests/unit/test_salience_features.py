"""Episode features, the offline score and the extractive summary."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from episodic.salience import (
    EpisodeFeatures,
    EpisodeTurn,
    episode_features,
    extractive_summary,
    novelty,
    offline_salience,
)

T = EpisodeTurn


def test_episode_turn_rejects_unknown_role_and_kind() -> None:
    with pytest.raises(ValueError, match="role"):
        T("robot", "other", "hi")
    with pytest.raises(ValueError, match="kind"):
        T("user", "shout", "hi")


def test_episode_turn_of_reads_any_turn_like_object() -> None:
    class Row:
        role = "tool"
        kind = "tool-error"
        text = "boom"

    assert T.of(Row()) == T("tool", "tool-error", "boom")


def test_counts_errors_corrections_decisions_facts_questions() -> None:
    turns = [
        T("user", "user-question", "I'm on Python 3.11 and my CI fails. Why?"),
        T("tool", "tool-error", "exit 1"),
        T("tool", "other", "Traceback (most recent call last): KeyError"),
        T("tool", "tool-success", "error count: 0"),  # a success never counts as an error
        T("assistant", "assistant-answer", "Let's pin the version. We decided on 3.11."),
        T("user", "user-correction", "Pin 3.12 instead."),
        T("user", "user-question", "Actually, not quite what I meant?"),
    ]
    f = episode_features(turns)
    assert f.n_turns == 7
    assert f.n_chars == sum(len(t.text) for t in turns)
    assert f.tool_errors == 2
    assert f.corrections == 2  # by kind, and by the "Actually" opener
    assert f.decisions == 2  # "Let's", "decided"
    assert f.first_person_facts == 2  # "I'm", "my"
    assert f.questions == 2
    assert f.novelty is None


def test_significant_events_ignore_tool_output() -> None:
    f = episode_features(
        [
            T("tool", "tool-success", "deployed to production, incident closed"),
            T("user", "user-question", "We got married last week!"),
        ]
    )
    assert f.significant == 1


def test_novelty_is_one_minus_max_cosine_to_earlier_centroids() -> None:
    vectors = np.array([[1.0, 0.0], [1.0, 0.0]])
    assert novelty(vectors, [[1.0, 0.0]]) == pytest.approx(0.0)
    assert novelty(vectors, [[0.0, 1.0]]) == pytest.approx(1.0)
    assert novelty(vectors, [[0.0, 1.0], [1.0, 1.0]]) == pytest.approx(1 - 1 / np.sqrt(2))
    assert novelty(vectors, np.empty((0, 2))) == 1.0  # a user's first episode
    # opposite directions clip at 1, never above
    assert novelty(vectors, [[-1.0, 0.0]]) == 1.0


def test_features_novelty_needs_vectors_and_priors() -> None:
    turns = [T("user", "user-question", "hello")]
    assert episode_features(turns, np.ones((1, 3))).novelty is None
    assert episode_features(turns, np.ones((1, 3)), []).novelty == 1.0
    near = episode_features(turns, np.ones((1, 3)), [[1.0, 1.0, 0.9]]).novelty
    assert near is not None and 0.0 < near < 0.05


def test_features_validate() -> None:
    with pytest.raises(ValueError):
        EpisodeFeatures(tool_errors=-1)
    with pytest.raises(ValueError):
        EpisodeFeatures(novelty=1.5)
    f = EpisodeFeatures(n_turns=3, decisions=2, novelty=0.4)
    assert EpisodeFeatures.from_mapping({**f.as_dict(), "extra": 1}) == f


def test_offline_score_spans_the_scale_on_anchor_episodes() -> None:
    mundane = episode_features(
        [T("user", "user-question", "what time is it?"), T("assistant", "assistant-answer", "3pm")]
    )
    critical = episode_features(
        [
            T("user", "user-question", "production outage, urgent: the API is down"),
            T("tool", "tool-error", "Traceback: connection refused"),
            T("tool", "tool-error", "Error: permission denied"),
            T("assistant", "assistant-answer", "Root cause: the secret rotation. Let's roll back."),
            T("user", "user-correction", "No, rollback is not enough; we'll go with a hotfix."),
            T("assistant", "assistant-answer", "Decided: hotfix, then a postmortem."),
            T("tool", "tool-error", "failed: migration lock"),
            T("user", "user-correction", "Actually release the lock first, my bad."),
        ],
        np.ones((8, 2)),
        [[1.0, -1.0]],
    )
    low, why_low = offline_salience(mundane)
    high, why_high = offline_salience(critical)
    assert low <= 2
    assert high >= 9
    assert why_low.startswith(f"offline score {low}")
    assert "tool error" in why_high and "novelty" in why_high


def test_offline_score_extremes() -> None:
    assert offline_salience(EpisodeFeatures())[0] == 1
    counts = [
        f.name for f in fields(EpisodeFeatures) if f.name not in ("n_turns", "n_chars", "novelty")
    ]
    big = EpisodeFeatures(**dict.fromkeys(counts, 20), n_turns=60, n_chars=50_000, novelty=1.0)
    assert offline_salience(big)[0] == 10


def test_extractive_summary_without_vectors_takes_longest_user_turn() -> None:
    texts = ["short question?", "a very long assistant answer " * 5, "the longer user turn here"]
    roles = ["user", "assistant", "user"]
    assert extractive_summary(texts, roles=roles) == "the longer user turn here"
    # no roles: the longest turn
    assert extractive_summary(texts).startswith("a very long assistant answer")
    assert extractive_summary([]) == ""


def test_extractive_summary_with_vectors_takes_the_most_central_turn() -> None:
    texts = ["outlier", "about auth", "more about auth", "auth again"]
    vectors = np.array([[0.0, 0.0, 1.0], [1.0, 0.3, 0.0], [1.0, 0.0, 0.0], [1.0, -0.3, 0.0]])
    assert extractive_summary(texts, vectors) == "more about auth"


def test_extractive_summary_skips_tool_turns_when_people_spoke() -> None:
    texts = ["Traceback " * 10, "why does it fail"]
    vectors = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert extractive_summary(texts, vectors, roles=["tool", "user"]) == "why does it fail"


def test_extractive_summary_is_one_bounded_line() -> None:
    long = "word " * 100 + "\nsecond line"
    s = extractive_summary([long], roles=["user"])
    assert "\n" not in s
    assert len(s) <= 160
    assert s.endswith("…")
