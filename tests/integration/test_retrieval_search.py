"""The shipped search on a real LanceDB, through `Memory.search` (what every
face calls): hits of the asking user only, every part of each score on its
fixed scale, recalls written only when asked (and only once flushed),
archived reflections kept but not returned, bad options refused."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from episodic.adapters.embedded import Memory
from episodic.retrieval import ScoreWeights
from tests.integration.helpers import make_memory
from tests.integration.memory_items import T0, reflection

TEXTS = [
    "my dog Rex needs a vet appointment next week for his vaccines",
    "deploy the payment service to the staging cluster with helm",
    "the login endpoint returns 401 after the token refresh",
    "add retry logging with exponential backoff to the http client",
    "book a table for two at the italian restaurant on friday",
]
NOW = T0 + timedelta(days=1)


def _said(text: str, hours: int) -> dict[str, str]:
    # an hour apart: no turn is another's context (the context gap is 30 minutes)
    return {"role": "user", "text": text, "ts": (T0 + timedelta(hours=hours)).isoformat()}


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    m = make_memory(tmp_path / "home")
    assert m.add("u1", [_said(t, i) for i, t in enumerate(TEXTS)]).accepted == len(TEXTS)
    # another user with the same words must never show up for u1
    m.add("u2", [_said("my dog Rex needs a vet appointment", 0)])
    return m


def test_hits_carry_their_score_components(memory: Memory) -> None:
    w = ScoreWeights(recency_weight=0.2, importance_weight=0.3)
    hits = memory.search("u1", "vet appointment for my dog", k=3, weights=w, now=NOW)
    assert hits[0].kind == "turn" and hits[0].text == TEXTS[0]
    assert [t.text for t in hits[0].turns] == [TEXTS[0]]
    assert 1 <= len(hits) <= 3 and len({h.item_id for h in hits}) == len(hits)
    assert all(h.text in TEXTS for h in hits)  # never u2's turn
    for h in hits:
        for part in (h.relevance, h.recency, h.importance):
            assert 0.0 <= part <= 1.0
        expected = h.relevance + 0.2 * h.recency + 0.3 * h.importance
        assert h.score == pytest.approx(expected, abs=1e-5)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_turn_hit_comes_without_its_neighbours(memory: Memory) -> None:
    # a minute apart, within the context gap: still the hit alone
    said = [
        {**_said(t, 0), "ts": (T0 + timedelta(minutes=i)).isoformat()} for i, t in enumerate(TEXTS)
    ]
    memory.add("u3", said)
    hits = memory.search("u3", "deploy payment service staging helm", k=1, now=NOW)
    assert [t.text for t in hits[0].turns] == [TEXTS[1]]


def test_reflections_are_found_and_their_recall_written_on_flush(memory: Memory) -> None:
    rt = memory.rt
    r = reflection(rt, "u1", "Rex the dog is a recurring worry: vet visits and vaccines")
    rt.reflections.write([r])
    rt.store.ensure_indexes()
    hits = memory.search("u1", "dog vaccines vet", k=3, kinds=("reflections",), now=NOW)
    assert [(h.item_id, h.kind) for h in hits] == [(r.reflection_id, "reflection")]
    assert hits[0].importance == pytest.approx(0.6)  # 6 on the 0-10 scale
    assert rt.reflections.list("u1")[0].recall_count == 0  # noted, not yet written
    rt.recalls.flush()
    stored = rt.reflections.list("u1")[0]
    assert stored.recall_count == 1 and stored.last_recalled_at == NOW


def test_search_without_recording_changes_nothing(memory: Memory) -> None:
    rt = memory.rt
    rt.reflections.write([reflection(rt, "u1", "the token refresh keeps failing with 401")])
    rt.store.ensure_indexes()
    version = rt.store.table("reflections").version
    hits = memory.search("u1", "token refresh", k=3, record=False, now=NOW)
    assert {h.kind for h in hits} == {"turn", "reflection"}
    assert rt.recalls.pending() == 0
    rt.recalls.flush()
    assert rt.store.table("reflections").version == version
    assert rt.reflections.list("u1")[0].recall_count == 0


def test_archived_reflections_are_kept_but_not_returned(memory: Memory) -> None:
    rt = memory.rt
    kept = reflection(rt, "u1", "helm deploys to staging are a weekly chore")
    faded = reflection(rt, "u1", "the staging cluster once lost a helm release")
    rt.reflections.write([kept, faded.model_copy(update={"status": "archived"})])
    rt.store.ensure_indexes()
    hits = memory.search("u1", "helm staging", kinds=("reflections",), record=False, now=NOW)
    assert [h.item_id for h in hits] == [kept.reflection_id]
    stored = {r.reflection_id: r for r in rt.reflections.list("u1", include_archived=True)}
    assert stored[faded.reflection_id].status == "archived"
    assert stored[faded.reflection_id].text == faded.text


def test_bad_options_are_refused(memory: Memory) -> None:
    with pytest.raises(ValueError, match="unknown kind"):
        memory.search("u1", "anything", kinds=("episodes",))
    with pytest.raises(ValueError, match="k must be"):
        memory.search("u1", "anything", k=0)


def test_a_question_that_names_a_speaker_is_answered_in_their_turns(tmp_path: Path) -> None:
    m = make_memory(tmp_path / "home")
    said = [
        ("Ann", "hiking hiking at Yosemite, hiking all weekend long"),
        ("Bo", "went hiking at Yosemite"),
        ("Ann", "the deploy to staging failed again"),
    ]
    turns = [
        {**_said(text, i), "meta": {"speaker": who}, "stream_id": "chat"}
        for i, (who, text) in enumerate(said)
    ]
    assert m.add("u1", turns).accepted == len(said)
    first = {q: m.search("u1", q, k=3, now=NOW)[0].text for q in (
        "where did Bo go hiking", "where did Ann go hiking", "where did Ann and Bo go hiking",
    )}  # fmt: skip
    assert first["where did Bo go hiking"] == said[1][1]  # Ann's turn matches more words
    assert first["where did Ann go hiking"] == said[0][1]
    assert first["where did Ann and Bo go hiking"] == said[0][1]  # both named: no one preferred
