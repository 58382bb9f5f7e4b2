"""One call per closed episode: salience, summary and candidate facts together;
and the offline summary a person can read."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from episodic.digest import Digest, EpisodeDigest, prepare
from episodic.errors import LLMTransientError
from episodic.llm.base import LLMProvider
from episodic.llm.fake import FakeProvider
from episodic.llm.offline import OfflineProvider
from episodic.models import Turn
from episodic.salience import EpisodeTurn, episode_features, offline_salience
from episodic.service.digest_batch import digest_all
from episodic.summary import readable_summary

NOW = datetime(2025, 3, 10, 9, 0, tzinfo=UTC)


def turn(i: int, role: str, kind: str, text: str) -> Turn:
    return Turn(
        turn_id=f"t{i}", user_id="u", stream_id="s", seq=i, role=role, kind=kind,  # type: ignore[arg-type]
        text=text, event_ts=NOW, ingest_ts=NOW, source="test",
    )  # fmt: skip


def digest_episode(
    provider: LLMProvider, turns: list[Turn], vectors: Any = None, prior: Any = None
) -> Digest:
    """One episode through the service's digest, as consolidation asks it."""
    p = prepare("e", turns, vectors=vectors, prior_centroids=prior, ended=NOW)
    return digest_all(provider, [p])["e"]


EPISODE = [
    turn(
        0,
        "user",
        "user-question",
        "Hi! Quick intro: I live in Oslo. Can you fix the flaky token refresh test?",
    ),  # fmt: skip
    turn(1, "assistant", "tool-call", 'Edit({"file_path": "auth/refresh.py"})'),
    turn(2, "tool", "tool-error", "Traceback: AssertionError in test_refresh"),
    turn(3, "assistant", "assistant-answer", "Fixed: the refresh tolerates clock skew. Done."),
]


def test_one_call_answers_salience_summary_and_facts() -> None:
    asked: list[str] = []

    def handler(messages: Any, response_model: Any, context: Any) -> dict[str, Any]:
        asked.append(response_model.__name__)
        return {
            "rating": {"score": 7, "rationale": "a fix", "summary": "Fixed the refresh test"},
            "facts": [{"text": "User lives in Oslo", "support": [1]}],
        }

    provider = FakeProvider(handler, model="scripted-v1")
    d = digest_episode(provider, EPISODE)
    assert asked == ["EpisodeDigest"]
    assert (d.salience.score, d.salience.summary, d.salience.source) == (
        7, "Fixed the refresh test", "scripted-v1",
    )  # fmt: skip
    assert [(f.text, f.support_turn_ids, f.decided_by) for f in d.facts] == [
        ("User lives in Oslo", ("t0",), "scripted-v1")
    ]


def test_a_broken_answer_falls_back_for_both_parts() -> None:
    provider = FakeProvider(
        lambda m, r, c: {"rating": {"score": 11}, "facts": [{"text": "x y z", "support": [9]}]},
        model="scripted-v1",
        retries=1,
    )
    d = digest_episode(provider, EPISODE)
    assert d.salience.source == "offline-fallback" and d.salience.error
    assert [(f.text, f.decided_by) for f in d.facts] == [("User lives in Oslo", "offline-fallback")]


def test_offline_digest_is_the_separate_answers_together() -> None:
    d = digest_episode(OfflineProvider(), EPISODE)
    assert d.salience.source == "offline" and 1 <= d.salience.score <= 10
    assert [f.text for f in d.facts] == ["User lives in Oslo"]
    assert "fix the flaky token refresh test" in d.salience.summary
    assert "{" not in d.salience.summary  # not a tool call's arguments


def test_offline_score_is_the_offline_formula() -> None:
    d = digest_episode(OfflineProvider(), EPISODE)
    expected, rationale = offline_salience(episode_features([EpisodeTurn.of(t) for t in EPISODE]))
    assert (d.salience.score, d.salience.rationale, d.salience.error) == (expected, rationale, None)


def test_a_model_without_summary_keeps_the_offline_one() -> None:
    offline = digest_episode(OfflineProvider(), EPISODE).salience.summary
    provider = FakeProvider(
        lambda m, r, c: {"rating": {"score": 3, "rationale": "r", "summary": ""}, "facts": []},
        model="scripted-v1",
    )
    d = digest_episode(provider, EPISODE)
    assert (d.salience.score, d.salience.summary) == (3, offline)


def test_a_provider_fault_falls_back_too() -> None:
    def handler(messages: Any, response_model: Any, context: Any) -> Any:
        raise LLMTransientError("fake", "fake-v1", "503 after retries")

    d = digest_episode(FakeProvider(handler), EPISODE)
    assert d.salience.source == "offline-fallback"
    assert d.salience.error is not None and "503" in d.salience.error


def test_vectors_feed_novelty() -> None:
    vectors = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.3, 0.0], [1.0, -0.3, 0.0]])
    d = digest_episode(OfflineProvider(), EPISODE, vectors, [[0.0, 1.0, 0.0]])
    assert d.salience.features.novelty is not None and d.salience.features.novelty > 0.1
    assert "novelty" in d.salience.rationale


def test_an_empty_episode_is_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        digest_episode(OfflineProvider(), [])


def test_the_schema_bounds_every_string_and_list() -> None:
    schema = EpisodeDigest.model_json_schema()
    defs = schema["$defs"]
    assert defs["SalienceRating"]["properties"]["summary"]["maxLength"] <= 200
    assert defs["ExtractedFact"]["properties"]["text"]["maxLength"] <= 300
    assert schema["properties"]["facts"]["maxItems"] <= 20


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        (
            [("user", "user-question", "Please rename the config loader and add a test."),
             ("assistant", "tool-call", 'Edit({"file_path": "x.py"})'),
             ("assistant", "assistant-answer", "Renamed it to load_settings. Tests pass.")],
            "Asked: Please rename the config loader and add a test. -> Renamed it to "
            "load_settings.",
        ),
        (
            [("user", "user-question", "Deploy the hotfix to staging now."),
             ("assistant", "tool-call", "deploy --env staging"),
             ("tool", "tool-error", "permission denied")],
            "Asked: Deploy the hotfix to staging now. -> ended on a tool error",
        ),
        ([("assistant", "assistant-answer", "Nightly job finished. 3 warnings.")],
         "Nightly job finished. 3 warnings."),
    ],
)  # fmt: skip
def test_readable_summary(turns: list[tuple[str, str, str]], expected: str) -> None:
    view = [EpisodeTurn(role=r, kind=k, text=t) for r, k, t in turns]
    assert readable_summary(view) == expected
