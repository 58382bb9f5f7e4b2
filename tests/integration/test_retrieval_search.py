"""Search on a real LanceDB: score components, recall statistics written once
per returned item in one batch, archived items kept but not returned."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from episodic.retrieval import Weights
from episodic.service.search import SearchOptions, search
from tests.integration.helpers import make_runtime
from tests.integration.memory_items import T0, episode, put, reflection

TEXTS = [
    "my dog Rex needs a vet appointment next week for his vaccines",
    "deploy the payment service to the staging cluster with helm",
    "the login endpoint returns 401 after the token refresh",
    "add retry logging with exponential backoff to the http client",
    "book a table for two at the italian restaurant on friday",
]


@pytest.fixture
def rt(tmp_path: Path):  # type: ignore[no-untyped-def]
    rt = make_runtime(tmp_path / "home")
    put(rt, *[episode(rt, "u1", t, seq=10 * i, salience=3 + i) for i, t in enumerate(TEXTS)])
    # another user with the same words must never show up for u1
    put(rt, episode(rt, "u2", "my dog Rex needs a vet appointment", seq=0, salience=10))
    return rt


def test_items_carry_their_score_components(rt) -> None:  # type: ignore[no-untyped-def]
    w = Weights(alpha=0.5, beta=1.0, gamma=2.0)
    items = search(rt, "u1", "vet appointment for my dog", SearchOptions(k=3, weights=w), now=T0)
    assert items[0].text.startswith("my dog Rex")
    assert 1 <= len(items) <= 3 and len({i.item_id for i in items}) == len(items)
    u1_ids = {e.episode_id for e in rt.episodes.list("u1")}
    assert {i.item_id for i in items} <= u1_ids
    for i in items:
        assert i.kind == "episode"
        for part in (i.recency, i.importance, i.similarity):
            assert 0.0 <= part <= 1.0
        assert i.score == pytest.approx(0.5 * i.recency + 1.0 * i.importance + 2.0 * i.similarity)
        assert i.hours_since_access == pytest.approx(0.0)
    assert [i.score for i in items] == sorted((i.score for i in items), reverse=True)


def test_recall_is_recorded_once_per_returned_item_in_one_write(rt) -> None:  # type: ignore[no-untyped-def]
    table = rt.store.table("episodes")
    before = table.version
    t1 = T0 + timedelta(hours=3)
    first = search(rt, "u1", "helm deploy staging", SearchOptions(k=2, kinds=("episodes",)), now=t1)
    assert len(first) == 2
    assert table.version == before + 1  # one merge for every returned episode
    by_id = {e.episode_id: e for e in rt.episodes.list("u1")}
    returned = {i.item_id for i in first}
    for eid, e in by_id.items():
        if eid in returned:
            assert e.recall_count == 1 and e.last_recalled_at == t1
        else:
            assert e.recall_count == 0 and e.last_recalled_at is None
    t2 = t1 + timedelta(hours=1)
    second = search(
        rt, "u1", "helm deploy staging", SearchOptions(k=2, kinds=("episodes",)), now=t2
    )
    counts = {e.episode_id: e.recall_count for e in rt.episodes.list("u1")}
    for i in second:
        assert counts[i.item_id] == (2 if i.item_id in returned else 1)
        assert i.recall_count == (1 if i.item_id in returned else 0)  # as read before this search
    assert sum(counts.values()) == len(first) + len(second)
    # the other user's items were never touched
    assert all(e.recall_count == 0 for e in rt.episodes.list("u2"))


def test_search_without_recording_changes_nothing(rt) -> None:  # type: ignore[no-untyped-def]
    version = rt.store.table("episodes").version
    items = search(rt, "u1", "token refresh", SearchOptions(k=2, record=False), now=T0)
    assert items
    assert rt.store.table("episodes").version == version
    assert all(e.recall_count == 0 for e in rt.episodes.list("u1"))


def test_recency_follows_last_access_not_rank(tmp_path: Path) -> None:
    rt = make_runtime(tmp_path / "home")
    text = "weekly sync about the roadmap"
    put(
        rt,
        episode(rt, "u1", text, seq=0, closed_at=T0 - timedelta(days=10)),
        episode(
            rt,
            "u1",
            text,
            seq=10,
            closed_at=T0 - timedelta(days=10),
            recall_count=1,
            last_recalled_at=T0 - timedelta(hours=1),
        ),
        episode(rt, "u1", text, seq=20, closed_at=T0 - timedelta(days=3)),
    )
    opts = SearchOptions(k=3, weights=Weights(alpha=1.0, beta=0.0, gamma=0.0), record=False)
    items = search(rt, "u1", "roadmap sync", opts, now=T0)
    hours = [round(i.hours_since_access) for i in items]
    assert hours == [1, 72, 240]  # most recently accessed first
    assert items[0].recency == 1.0 and items[-1].recency == 0.0


def test_archived_items_are_kept_but_not_returned(rt) -> None:  # type: ignore[no-untyped-def]
    dog = next(e for e in rt.episodes.list("u1") if e.text.startswith("my dog"))
    rt.episodes.update("u1", {dog.episode_id: {"status": "archived"}})
    items = search(rt, "u1", "vet appointment for my dog Rex", SearchOptions(k=5), now=T0)
    assert dog.episode_id not in {i.item_id for i in items}
    stored = {e.episode_id: e for e in rt.episodes.list("u1")}
    assert stored[dog.episode_id].status == "archived"
    assert stored[dog.episode_id].text == dog.text and len(stored) == len(TEXTS)


def test_reflections_are_searchable_and_their_recall_recorded(rt) -> None:  # type: ignore[no-untyped-def]
    r = reflection(rt, "u1", "Rex the dog is a recurring worry: vet visits and vaccines")
    rt.reflections.write([r])
    rt.store.ensure_indexes()
    items = search(rt, "u1", "dog vaccines vet", SearchOptions(k=3, kinds=("reflections",)), now=T0)
    assert [(i.item_id, i.kind) for i in items] == [(r.reflection_id, "reflection")]
    assert items[0].raw_importance == pytest.approx(6.0)
    stored = rt.reflections.list("u1")[0]
    assert stored.recall_count == 1 and stored.last_recalled_at == T0


def test_unknown_kind_is_refused(rt) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="unknown kind"):
        search(rt, "u1", "anything", SearchOptions(kinds=("turns",)))
