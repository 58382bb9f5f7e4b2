"""Merge scenarios, through the offline provider and through a scripted model."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import ValidationError

from episodic.facts import (
    CandidateSet,
    ExistingFact,
    MergeDecisions,
    decide,
    extract_facts,
    merge_context,
    merge_messages,
)
from episodic.llm.fake import FakeProvider
from episodic.llm.offline import OfflineProvider
from tests.unit.test_facts_support import NOW, Store, new_fact, turn, vec


def never_called(messages: Any, response_model: Any, context: Any) -> Any:
    raise AssertionError("the model must not be asked")


def update(fact_id: int, text: str = "User lives in Berlin") -> dict[str, Any]:
    return {"decisions": [{"event": "UPDATE", "id": fact_id, "text": text, "new_index": 1}]}


def scripted(*answers: dict[str, Any]) -> FakeProvider:
    """A fake model that gives `answers` in turn (the last one again when re-asked more)."""
    queue = list(answers)

    def handler(messages: Any, response_model: Any, context: Any) -> Any:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return FakeProvider(handler, model="scripted-v1", retries=2)


def asking(answer: dict[str, Any]) -> tuple[FakeProvider, list[str]]:
    """A fake model that always gives `answer`, and the response models it is asked for."""
    asked: list[str] = []

    def handler(messages: Any, response_model: Any, context: Any) -> Any:
        asked.append(response_model.__name__)
        return answer

    return FakeProvider(handler), asked


def episode(store: Store, provider: Any, *texts: str) -> list[Any]:
    """Extract offline from user turns, decide with `provider`, apply to the store."""
    facts = extract_facts(OfflineProvider(), [turn(i, t) for i, t in enumerate(texts)], now=NOW)
    decisions = decide(provider, store.sets(facts), now=NOW)
    store.apply(decisions)
    return decisions


# -- the same fact twice ---------------------------------------------------------------


@pytest.mark.parametrize("first", ["offline", "model"])
def test_same_fact_twice_is_a_noop_by_rule_without_a_call(first: str) -> None:
    store = Store()
    provider = OfflineProvider() if first == "offline" else FakeProvider(never_called)
    assert [d.event for d in episode(store, provider, "I live in Paris.")] == ["ADD"]

    second = FakeProvider(never_called)
    [d] = episode(store, second, "So, I live in Paris!")
    assert (d.event, d.decided_by, d.target_fact_id) == ("NOOP", "rule", "f1")
    assert second.calls == []
    assert store.texts() == ["User lives in Paris"]


def test_same_fact_twice_in_one_episode_gives_one_add_and_one_noop() -> None:
    a, b = new_fact("User lives in Paris", "t1"), new_fact("user lives in paris.", "t2")
    provider = FakeProvider(never_called)
    d = decide(provider, [CandidateSet(a, vec(a.text)), CandidateSet(b, vec(b.text))], now=NOW)
    assert [x.event for x in d] == ["ADD", "NOOP"]
    assert d[1].target_index == 0 and d[1].target_fact_id is None
    assert provider.calls == []


def test_adding_the_same_memory_never_deletes_it_even_if_the_model_says_so() -> None:
    # mem0 #1674: a model that answers DELETE for a repeat must not lose the fact
    store = Store()
    episode(store, OfflineProvider(), "I have a dog named Rex.")
    provider = scripted({"decisions": [{"event": "DELETE", "id": 1, "new_index": 1}]})
    [d] = episode(store, provider, "I have a dog named Rex")
    assert d.event == "NOOP" and provider.calls == []
    assert store.texts() == ["User has a dog named Rex"]


# -- Paris then Berlin -----------------------------------------------------------------


def test_moving_updates_the_residence_offline() -> None:
    store = Store()
    episode(store, OfflineProvider(), "I live in Paris.")
    [d] = episode(store, OfflineProvider(), "Btw I moved to Berlin last month.")
    assert (d.event, d.target_fact_id, d.decided_by) == ("UPDATE", "f1", "offline")
    assert d.old_text == "User lives in Paris"
    assert d.new_text is not None and "Berlin" in d.new_text
    assert store.texts() == ["User moved to Berlin last month"]
    assert store.texts("superseded") == ["User lives in Paris"]


def test_moving_updates_the_residence_with_a_model() -> None:
    store = Store()
    episode(store, OfflineProvider(), "I live in Paris.")
    provider = scripted(
        {
            "decisions": [
                {"event": "UPDATE", "id": 1, "text": "User lives in Berlin", "new_index": 1}
            ]
        }
    )
    [d] = episode(store, provider, "I moved to Berlin.")
    assert (d.event, d.target_fact_id, d.decided_by) == ("UPDATE", "f1", "scripted-v1")
    assert d.new_text == "User lives in Berlin"
    assert len(provider.calls) == 1
    assert "[1] User lives in Paris" in provider.calls[0][-1]["content"]


# -- Rex ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["offline", "model"])
def test_rex_died_deletes_the_dog_fact(path: str) -> None:
    store = Store()
    episode(store, OfflineProvider(), "I have a dog named Rex.", "I work at Acme.")
    provider: Any = OfflineProvider()
    if path == "model":
        provider = scripted({"decisions": [{"event": "DELETE", "id": 1, "new_index": 1}]})
    [d] = episode(store, provider, "Rex died last week.")
    assert d.event == "DELETE" and d.new_text is None
    assert store.rows[d.target_fact_id or ""] == ("User has a dog named Rex", "deleted")
    assert store.texts() == ["User works at Acme"]


# -- empty store -------------------------------------------------------------------------


def test_empty_store_adds_without_a_call() -> None:
    provider = FakeProvider(never_called)
    facts = [new_fact("User lives in Paris"), new_fact("User works at Acme")]
    decisions = decide(provider, [CandidateSet(f, vec(f.text), []) for f in facts], now=NOW)
    assert [(d.event, d.decided_by, d.new_text) for d in decisions] == [
        ("ADD", "rule", "User lives in Paris"),
        ("ADD", "rule", "User works at Acme"),
    ]
    assert provider.calls == [] and provider.usage.calls == 0


# -- bad answers -------------------------------------------------------------------------


def _paris_then_berlin() -> list[CandidateSet]:
    paris = ExistingFact("f-paris", "User lives in Paris", vec("User lives in Paris"))
    berlin = new_fact("User moved to Berlin")
    return [CandidateSet(berlin, vec(berlin.text), [paris])]


def test_out_of_range_id_fails_validation_with_the_context() -> None:
    sets = _paris_then_berlin()
    ctx = merge_context(sets, dup_threshold=0.95)
    bad = {"decisions": [{"event": "UPDATE", "id": 7, "text": "x", "new_index": 1}]}
    with pytest.raises(ValidationError, match="id 7"):
        MergeDecisions.model_validate(bad, context=ctx)
    missing = {"decisions": [{"event": "DELETE", "id": None, "new_index": 1}]}
    with pytest.raises(ValidationError, match="needs the id"):
        MergeDecisions.model_validate(missing, context=ctx)


def test_out_of_range_id_is_reasked_and_a_fixed_answer_is_used() -> None:
    provider = scripted(
        {
            "decisions": [
                {"event": "UPDATE", "id": 9, "text": "User lives in Berlin", "new_index": 1}
            ]
        },
        {
            "decisions": [
                {"event": "UPDATE", "id": 1, "text": "User lives in Berlin", "new_index": 1}
            ]
        },
    )
    [d] = decide(provider, _paris_then_berlin(), now=NOW)
    assert len(provider.calls) == 2
    assert "failed validation" in provider.calls[1][-1]["content"]
    assert (d.event, d.target_fact_id, d.decided_by) == ("UPDATE", "f-paris", "scripted-v1")


def test_never_fixed_out_of_range_id_falls_back_to_the_offline_merge(
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = scripted({"decisions": [{"event": "UPDATE", "id": 9, "text": "?", "new_index": 1}]})
    with caplog.at_level(logging.WARNING):
        [d] = decide(provider, _paris_then_berlin(), now=NOW)
    assert len(provider.calls) == 3  # the first answer and two re-asks
    assert (d.event, d.target_fact_id, d.decided_by) == ("UPDATE", "f-paris", "offline-fallback")
    assert d.new_text == "User moved to Berlin"
    assert "offline-fallback" in caplog.text


# -- contradictions keep the new information --------------------------------------------


def test_model_delete_on_a_contradiction_becomes_an_update() -> None:
    # mem0 #4536: DELETE of the old value without adding the new one left nothing
    store = Store()
    episode(store, OfflineProvider(), "I live in Paris.")
    provider = scripted({"decisions": [{"event": "DELETE", "id": 1, "new_index": 1}]})
    [d] = episode(store, provider, "I moved to Berlin.")
    assert (d.event, d.target_fact_id, d.decided_by) == ("UPDATE", "f1", "rule")
    assert d.new_text == "User moved to Berlin" and "DELETE" in d.note
    assert store.texts() == ["User moved to Berlin"]


def test_model_saying_nothing_for_a_fact_adds_it(caplog: pytest.LogCaptureFixture) -> None:
    # both candidates share a slot with their new fact: the model is asked
    jazz = ExistingFact("f1", "User likes jazz music", vec("User likes jazz music"))
    initech = ExistingFact("f2", "User works at Initech", vec("User works at Initech"))
    a, b = new_fact("User likes jazz"), new_fact("User works at Acme")
    sets = [CandidateSet(a, vec(a.text), [jazz]), CandidateSet(b, vec(b.text), [initech])]
    provider = scripted({"decisions": [{"event": "ADD", "new_index": 1}]})
    with caplog.at_level(logging.WARNING):
        decisions = decide(provider, sets, now=NOW)
    assert [(d.event, d.new_text) for d in decisions] == [
        ("ADD", "User likes jazz"),
        ("ADD", "User works at Acme"),
    ]
    assert decisions[1].decided_by == "rule" and "no decision" in caplog.text


def test_model_noop_must_name_the_fact_that_already_holds_it() -> None:
    # mem0 #2875: "NONE" with nothing stored lost the fact; a NOOP without an id is re-asked
    provider = scripted(
        {"decisions": [{"event": "NOOP", "new_index": 1}]},
        {"decisions": [{"event": "ADD", "new_index": 1}]},
    )
    [d] = decide(provider, _paris_then_berlin(), now=NOW)
    # the re-asked ADD would leave Paris and Berlin both active: checked, not trusted
    assert len(provider.calls) == 2 and d.event == "UPDATE"
    assert "two-active-values" in d.note


def test_only_unsettled_sets_go_to_the_model_in_one_call() -> None:
    paris = ExistingFact("f1", "User lives in Paris", vec("User lives in Paris"))
    repeat, fresh, moved = (
        new_fact("User lives in Paris"),
        new_fact("User plays chess"),
        new_fact("User moved to Rome"),
    )
    sets = [
        CandidateSet(repeat, vec(repeat.text), [paris]),
        CandidateSet(fresh, vec(fresh.text), []),
        CandidateSet(moved, vec(moved.text), [paris]),
    ]
    provider = scripted({"decisions": [{"event": "UPDATE", "id": 1, "text": "", "new_index": 1}]})
    decisions = decide(provider, sets, now=NOW)
    assert len(provider.calls) == 1
    prompt = provider.calls[0][-1]["content"]
    assert "User moved to Rome" in prompt and "User plays chess" not in prompt
    assert [(d.event, d.decided_by) for d in decisions] == [
        ("NOOP", "rule"),
        ("ADD", "rule"),
        ("UPDATE", "scripted-v1"),
    ]
    assert decisions[2].new_text == "User moved to Rome"  # empty UPDATE text: the new fact


def test_two_updates_of_one_fact_in_one_episode_chain() -> None:
    paris = ExistingFact("f1", "User lives in Paris", vec("User lives in Paris"))
    lyon, rome = new_fact("User moved to Lyon"), new_fact("User moved to Rome")
    sets = [CandidateSet(f, vec(f.text), [paris]) for f in (lyon, rome)]
    decisions = decide(OfflineProvider(), sets, now=NOW)
    assert [(d.event, d.target_fact_id, d.target_index) for d in decisions] == [
        ("UPDATE", "f1", None),
        ("UPDATE", None, 0),
    ]
    store = Store(rows={"f1": ("User lives in Paris", "active")})
    store.apply(decisions)
    assert store.texts() == ["User moved to Rome"]
    assert sorted(store.texts("superseded")) == ["User lives in Paris", "User moved to Lyon"]


def test_a_fact_and_its_ending_in_one_episode() -> None:
    store = Store()
    decisions = episode(store, FakeProvider(never_called), "I have a dog named Rex. Rex died.")
    assert [(d.event, d.target_index) for d in decisions] == [("ADD", None), ("DELETE", 0)]
    assert store.texts() == [] and store.texts("deleted") == ["User has a dog named Rex"]


def test_merge_prompt_numbers_facts_and_never_shows_ids() -> None:
    sets = _paris_then_berlin()
    text = "\n".join(m["content"] for m in merge_messages(sets, now=NOW))
    assert "f-paris" not in text and "[1] User lives in Paris" in text
    assert "2024-06-01" in text


def test_dup_threshold_is_checked() -> None:
    with pytest.raises(ValueError, match="dup_threshold"):
        decide(OfflineProvider(), [], now=NOW, dup_threshold=0.0)


def test_unrelated_candidates_add_without_a_call() -> None:
    # the nearest stored facts are always candidates; one that the new fact
    # neither ends, nor shares a slot with, nor nearly repeats is no reason to ask
    paris = ExistingFact("f1", "User lives in Paris", vec("User lives in Paris"))
    a = new_fact("User likes jazz")
    provider, asked = asking({"decisions": []})
    [d] = decide(provider, [CandidateSet(a, vec(a.text), [paris])], now=NOW)
    assert (d.event, d.decided_by, d.note) == ("ADD", "rule", "no related candidate")
    assert asked == []


def test_a_same_slot_candidate_is_asked_about() -> None:
    initech = ExistingFact("f1", "User works at Initech", vec("User works at Initech"))
    b = new_fact("User works at Acme")
    provider, asked = asking(update(1, b.text))
    [d] = decide(provider, [CandidateSet(b, vec(b.text), [initech])], now=NOW)
    assert asked == ["MergeDecisions"] and d.event == "UPDATE"


def test_a_model_add_beside_another_value_of_the_slot_falls_back() -> None:
    # a small model answered ADD for "lives in Berlin" beside "lives in Paris":
    # two active residences; the offline merge decides that item instead
    paris = ExistingFact("f1", "User lives in Paris", vec("User lives in Paris"))
    b = new_fact("User lives in Berlin")
    provider = scripted({"decisions": [{"event": "ADD", "new_index": 1}]})
    [d] = decide(provider, [CandidateSet(b, vec(b.text), [paris])], now=NOW)
    assert (d.event, d.target_fact_id) == ("UPDATE", "f1")
    assert d.decided_by == "offline-fallback" and "two-active-values" in d.note


def test_a_request_to_forget_that_names_nothing_stored_is_not_kept() -> None:
    """Kept as an active fact, it would hold the very words to be forgotten."""
    cat = ExistingFact("f-cat", "User has a cat named Miso", vec("User has a cat named Miso"))
    ask = new_fact("User asked to forget that the Stripe thing they mentioned")
    (d,) = decide(OfflineProvider(), [CandidateSet(ask, vec(ask.text), [cat])], now=NOW)
    assert d.event == "NOOP" and d.target_fact_id is None and d.new_text is None
    (alone,) = decide(OfflineProvider(), [CandidateSet(ask, vec(ask.text), [])], now=NOW)
    assert alone.event == "NOOP" and alone.new_text is None


def test_forget_where_i_live_ends_the_residence() -> None:
    home = ExistingFact("f-home", "User lives in Bristol", vec("User lives in Bristol"))
    ask = new_fact("User asked to forget where they live")
    (d,) = decide(OfflineProvider(), [CandidateSet(ask, vec(ask.text), [home])], now=NOW)
    assert d.event == "DELETE" and d.target_fact_id == "f-home"
