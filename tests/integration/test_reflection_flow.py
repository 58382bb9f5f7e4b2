"""The reflect flow on a real LanceDB under Prefect's harness: the threshold
arithmetic, evidence that must belong to the user, reflections that are
searchable and never enter raw."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from episodic.llm.fake import FakeProvider
from episodic.models import Episode, now_utc
from episodic.reflection import FocalQuestions, Insights
from episodic.service.reflect import reflect_user, since_last
from flows.reflect import reflect
from tests.integration.helpers import make_memory
from tests.integration.memory_items import episode, put

pytestmark = pytest.mark.usefixtures("prefect_harness")

THEME = [
    "Rex the dog limped after the park walk, so we booked the vet clinic",
    "the vet clinic moved Rex's appointment to Thursday morning",
    "Rex needs his vaccines renewed at the vet clinic before the trip",
    "we compared pet insurance plans that cover the vet clinic visits for Rex",
]


def _episodes(rt, user: str, saliences: list[int], start: int = 0) -> list[Episode]:  # type: ignore[no-untyped-def]
    closed = now_utc() - timedelta(hours=1)
    return [
        episode(
            rt,
            user,
            f"{THEME[i % len(THEME)]} (note {start + i})",
            seq=10 * (start + i),
            salience=s,
            closed_at=closed,
        )
        for i, s in enumerate(saliences)
    ]


def test_threshold_149_waits_and_150_reflects(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    rt = memory.rt
    put(rt, *_episodes(rt, "u1", [10] * 14 + [9]))  # 149
    res = reflect(user="u1", memory=memory)["u1"]
    assert res["due"] is False and res["pending_salience"] == pytest.approx(149.0)
    assert rt.reflections.list("u1") == []

    put(rt, *_episodes(rt, "u1", [1], start=15))  # 150
    raw_before = rt.raw.count()
    res = reflect(user="u1", memory=memory)["u1"]
    assert res["due"] is True and res["pending_salience"] == pytest.approx(150.0)
    stored = rt.reflections.list("u1")
    assert res["written"] == len(stored) >= 1
    u1_ids = {e.episode_id for e in rt.episodes.list("u1")}
    for r in stored:
        assert r.evidence_episode_ids and set(r.evidence_episode_ids) <= u1_ids
        assert 1.0 <= r.importance <= 10.0
    assert rt.raw.count() == raw_before  # reflections never enter raw

    # the pile is spent: the same episodes do not count again
    assert since_last(rt, "u1")[1] == 0.0
    again = reflect(user="u1", memory=memory)["u1"]
    assert again["due"] is False and again["pending_salience"] == 0.0


def test_reflections_are_retrievable_by_search(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    rt = memory.rt
    put(rt, *_episodes(rt, "u1", [8] * 6))
    res = reflect(user="u1", force=True, memory=memory)["u1"]
    assert res["written"] >= 1
    rt.store.ensure_indexes()
    hits = memory.search("u1", "Rex vet clinic", k=5, kinds=("reflections",))
    stored = {r.reflection_id for r in rt.reflections.list("u1")}
    assert hits and {h.item_id for h in hits} <= stored
    assert all(h.kind == "reflection" for h in hits)
    assert rt.raw.count() == 0


def _citing(pick: Any) -> FakeProvider:
    """A model that asks one question and cites the statements `pick(sources)` chooses."""

    def handler(messages: Any, response_model: Any, context: dict[str, Any]) -> dict[str, Any]:
        if response_model is FocalQuestions:
            return {"questions": ["What is going on with Rex and the vet?"]}
        assert response_model is Insights
        sources = context["sources"]
        return {"insights": [{"text": t, "evidence": ev} for t, ev in pick(sources)]}

    return FakeProvider(handler)


def test_flow_keeps_only_the_users_own_evidence(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    rt = memory.rt
    put(rt, *_episodes(rt, "alice", [8] * 4))
    put(rt, *_episodes(rt, "bob", [9] * 4, start=100))  # same words, another user
    # cite every statement shown, plus a number that was never shown
    rt.provider = _citing(lambda s: [("Rex worries everyone", [*range(1, len(s) + 1), 999])])
    res = reflect(user="alice", force=True, memory=memory)["alice"]
    assert res["written"] == 1 and res["dropped_evidence"] >= 1
    (r,) = rt.reflections.list("alice")
    alice = {e.episode_id for e in rt.episodes.list("alice")}
    assert r.evidence_episode_ids and set(r.evidence_episode_ids) <= alice
    assert rt.reflections.list("bob") == []


def test_another_users_item_in_the_pool_is_rejected(tmp_path: Path) -> None:
    """A caller hands bob's episode to alice's reflection, even relabelled as
    hers: ownership is read from storage, so the citation is dropped."""
    memory = make_memory(tmp_path / "home")
    rt = memory.rt
    mine = put(rt, *_episodes(rt, "alice", [8] * 3))
    (theirs,) = put(rt, *_episodes(rt, "bob", [9], start=100))
    smuggled = theirs.model_copy(update={"user_id": "alice"})

    def pick(sources: list[Any]) -> list[tuple[str, list[int]]]:
        pos = {s.item_id: n for n, s in enumerate(sources, start=1)}
        return [
            ("Only bob's episode supports this", [pos[theirs.episode_id]]),
            ("Alice and bob both", [pos[mine[0].episode_id], pos[theirs.episode_id]]),
        ]

    rt.provider = _citing(pick)
    run = reflect_user(rt, "alice", [*mine, smuggled], total=33.0)
    assert run.written == 1 and run.dropped_evidence == 2
    (r,) = rt.reflections.list("alice")
    assert r.text == "Alice and bob both"
    assert r.evidence_episode_ids == [mine[0].episode_id]


def test_an_insight_said_twice_is_written_once(tmp_path: Path) -> None:
    """Two focal questions lead to the same insight: one reflection, citing
    both questions' evidence; a later run finding it again writes nothing."""
    memory = make_memory(tmp_path / "home")
    rt = memory.rt
    mine = put(rt, *_episodes(rt, "alice", [8] * 3))

    def pick(sources: list[Any]) -> list[tuple[str, list[int]]]:
        pos = {s.item_id: n for n, s in enumerate(sources, start=1)}
        return [
            ("Rex keeps alice busy at the vet", [pos[mine[0].episode_id]]),
            ("Rex keeps Alice busy at the vet!", [pos[e.episode_id] for e in mine[1:]]),
        ]

    rt.provider = _citing(pick)
    run = reflect_user(rt, "alice", mine, total=24.0)
    assert (run.written, run.repeats) == (1, 1)
    (r,) = rt.reflections.list("alice")
    assert r.text == "Rex keeps Alice busy at the vet!"  # the one citing more
    assert sorted(r.evidence_episode_ids) == sorted(e.episode_id for e in mine)
    again = reflect_user(rt, "alice", mine, total=24.0)
    assert (again.written, again.repeats) == (0, 2)
    assert [x.reflection_id for x in rt.reflections.list("alice")] == [r.reflection_id]
