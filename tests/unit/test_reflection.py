"""Reflection: the trigger arithmetic, the schemas, evidence checks, the offline reflection."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from episodic.errors import EpisodicError
from episodic.llm.offline import OfflineProvider
from episodic.prompts.reflection import focal_question_messages, insight_messages
from episodic.reflection import (
    EvidenceError,
    FocalQuestions,
    Insight,
    Insights,
    ReflectionSource,
    insight_importance,
    map_evidence,
    offline_reflect,
    recurring_themes,
    salience_since,
    should_reflect,
    validate_evidence,
)

NOW = datetime(2024, 6, 1, tzinfo=UTC)
SOURCES = [
    ReflectionSource("e1", "Caroline went to the LGBTQ support group. She felt welcome.", 6),
    ReflectionSource("e2", "Melanie is painting. Caroline wants to adopt children.", 7),
    ReflectionSource("e3", "We fixed the retry_policy in the Postgres client.", 5),
    ReflectionSource("e4", "Postgres timeouts again; retry_policy max raised to 5.", 8),
    ReflectionSource("e5", "Caroline is researching adoption agencies.", 9),
    ReflectionSource("e6", "Lunch was fine.", 1),
]


@pytest.mark.parametrize(("total", "fires"), [(149, False), (150, True), (151, True)])
def test_threshold_arithmetic(total: int, fires: bool) -> None:
    saliences = [10] * (total // 10) + ([total % 10] if total % 10 else [])
    assert salience_since(saliences) == total
    assert should_reflect(salience_since(saliences)) is fires
    assert should_reflect(float(total), threshold=150.0) is fires


def test_salience_since_validates_and_counts_unscored_as_zero() -> None:
    assert salience_since([]) == 0.0
    assert salience_since([0, 0, 7]) == 7.0
    with pytest.raises(ValueError):
        salience_since([11])
    with pytest.raises(ValueError):
        salience_since([-1])
    with pytest.raises(ValueError):
        should_reflect(10.0, threshold=0.0)


def test_map_evidence_is_one_based_ordered_and_deduplicated() -> None:
    ids = ["a", "b", "c"]
    assert map_evidence([3, 1, 3], ids) == ["c", "a"]


def test_map_evidence_drops_out_of_range_with_a_reason(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="episodic.reflection"):
        assert map_evidence([0, 2, 4], ["a", "b", "c"]) == ["b"]
    assert "outside the numbered statements 1..3" in caplog.text
    with pytest.raises(EvidenceError) as err:
        map_evidence([4], ["a", "b", "c"], strict=True)
    assert err.value.evidence == 4
    assert isinstance(err.value, EpisodicError) and isinstance(err.value, ValueError)


def test_evidence_of_another_user_is_rejected() -> None:
    owner_of = {"e1": "alice", "e2": "bob", "e3": "alice"}
    kept = validate_evidence(["e1", "e2", "e3", "e1", "ghost"], user_id="alice", owner_of=owner_of)
    assert kept == ["e1", "e3"]
    with pytest.raises(EvidenceError, match="another user"):
        validate_evidence(["e2"], user_id="alice", owner_of=owner_of, strict=True)
    with pytest.raises(EvidenceError, match="does not exist"):
        validate_evidence(["ghost"], user_id="alice", owner_of=owner_of, strict=True)


def test_response_models_are_bounded() -> None:
    with pytest.raises(ValidationError):
        FocalQuestions(questions=[])
    with pytest.raises(ValidationError):
        FocalQuestions(questions=["Why is that?"] * 6)
    with pytest.raises(ValidationError):
        Insight(text="x" * 501, evidence=[1])
    with pytest.raises(ValidationError):
        Insight(text="an insight", evidence=[])
    with pytest.raises(ValidationError):
        Insight(text="an insight", evidence=[0])
    with pytest.raises(ValidationError):
        Insights(insights=[Insight(text="an insight", evidence=[1])] * 6)
    assert Insights().insights == []


def test_prompts_number_statements_and_ask_for_evidence() -> None:
    statements = ["Alice fixed the bug.", "Alice wrote\nthe tests."]
    focal = focal_question_messages(statements, NOW)[-1]["content"]
    assert "1. Alice fixed the bug.\n2. Alice wrote the tests." in focal
    assert "3 most salient high-level questions" in focal and "2024-06-01" in focal
    insight = insight_messages("What does Alice do?", statements, NOW)[-1]["content"]
    assert "What 5 high-level insights can you infer" in insight
    assert "(because of 1, 5, 3)" in insight
    assert "between 1 and 2" in insight
    with pytest.raises(ValueError):
        insight_messages("q", [], NOW)
    with pytest.raises(ValueError):
        focal_question_messages(["s"] * 101, NOW)


def test_recurring_themes_find_entities_and_technical_terms() -> None:
    themes = recurring_themes(SOURCES)
    assert themes[0].terms == ("Caroline",)
    assert themes[0].evidence_ids == ("e1", "e2", "e5")
    postgres = next(t for t in themes if "Postgres" in t.terms)
    assert "retry_policy" in postgres.terms and postgres.evidence_ids == ("e3", "e4")
    assert all(len(t.evidence_ids) >= 2 for t in themes)
    assert not any("e6" in t.evidence_ids for t in themes)


def test_offline_reflect_cites_episodes_with_importance() -> None:
    insights = offline_reflect(SOURCES)
    assert insights == offline_reflect(SOURCES)  # deterministic
    first = insights[0]
    assert first.evidence_ids == ("e1", "e2", "e5")
    assert first.importance == pytest.approx((6 + 7 + 9) / 3, abs=0.01)
    assert (
        "Caroline" in first.text and "adoption agencies" in first.text
    )  # quotes e5, the most salient
    assert len(insights) <= 5 and all(len(i.text) <= 500 for i in insights)
    assert offline_reflect(SOURCES, max_insights=1) == [first]


def test_offline_reflect_without_recurrence_is_empty() -> None:
    assert (
        offline_reflect(
            [ReflectionSource("a", "Postgres tuning."), ReflectionSource("b", "Lunch.")]
        )
        == []
    )
    assert offline_reflect([]) == []
    with pytest.raises(ValueError, match="duplicate"):
        offline_reflect([ReflectionSource("a", "x"), ReflectionSource("a", "y")])


def test_insight_importance_is_mean_within_scale() -> None:
    assert insight_importance([4, 8]) == 6.0
    assert insight_importance([]) == 1.0
    assert insight_importance([0, 0]) == 1.0


def test_offline_provider_answers_reflection_schemas() -> None:
    provider = OfflineProvider()
    sources = [{"item_id": s.item_id, "text": s.text, "salience": s.salience} for s in SOURCES]
    answer = provider.structured([], Insights, context={"sources": sources})
    ids = [s.item_id for s in SOURCES]
    assert [map_evidence(i.evidence, ids) for i in answer.insights][0] == ["e1", "e2", "e5"]
    questions = provider.structured(
        [], FocalQuestions, context={"statements": [s.text for s in SOURCES]}
    )
    assert any("Caroline" in q for q in questions.questions)
    fallback = provider.structured([], FocalQuestions, context={"statements": ["only once"]})
    assert len(fallback.questions) == 1


def test_offline_evidence_is_capped_to_the_most_salient() -> None:
    many = [ReflectionSource(f"e{i:02d}", f"Postgres note {i}.", float(i % 10)) for i in range(30)]
    insights = offline_reflect(many)
    assert insights[0].text.startswith("Recurring theme across 30 episodes: Postgres")
    cited = insights[0].evidence_ids
    assert len(cited) == 20
    assert list(cited) == sorted(cited)  # input order
    assert min(s.salience for s in many if s.item_id in cited) >= 3
    answer = OfflineProvider().structured([], Insights, context={"sources": many})
    assert len(answer.insights[0].evidence) == 20


def test_ignored_terms_are_not_themes() -> None:
    themes = recurring_themes(SOURCES, ignore=["caroline"])
    assert all("Caroline" not in t.terms for t in themes)
    answer = Insights.offline_answer({"sources": SOURCES, "ignore": ["Caroline", "postgres"]})
    assert all("Caroline" not in i.text.split(":")[1].split(".")[0] for i in answer.insights)


def test_dates_are_not_themes() -> None:
    """Issue 16: "Recurring theme across 3 episodes: June" said nothing."""
    from episodic.reflection import ReflectionSource, offline_reflect

    sources = [
        ReflectionSource(f"e{i}", f"Asked: in June, on Monday, fix the {w} -> done", 5.0)
        for i, w in enumerate(["Postgres index", "Postgres vacuum", "login page"])
    ]
    insights = offline_reflect(sources)
    assert insights and "Postgres" in insights[0].text
    assert not any(w in i.text.split(":")[1] for i in insights for w in ("June", "Monday"))
