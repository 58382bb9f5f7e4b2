"""The maintain flow on a real LanceDB under Prefect's harness, with a chosen
`now`: recalled memories decay more slowly, faded ones are archived and kept,
and a search that returns an episode's turn keeps that episode alive."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from episodic.adapters.embedded import Memory
from flows.maintain import maintain
from tests.integration.helpers import make_memory
from tests.integration.memory_items import T0, episode, put, told

pytestmark = pytest.mark.usefixtures("prefect_harness")

TAU = 168.0


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    return make_memory(tmp_path / "home")


def _maintain(memory: Memory, now: datetime) -> dict[str, Any]:
    """One maintain run for u1 at `now`: decay with TAU hours, archive below 0.5."""
    return maintain(user="u1", now=now, tau_hours=TAU, floor=0.5, memory=memory)


def test_a_recalled_episode_decays_more_slowly(memory: Memory) -> None:
    rt = memory.rt
    forgotten, recalled = put(
        rt,
        episode(rt, "u1", "the quarterly budget review", seq=0, salience=6),
        episode(
            rt,
            "u1",
            "the quarterly budget review, again",
            seq=10,
            salience=6,
            recall_count=4,
            last_recalled_at=T0,
        ),
    )
    res = _maintain(memory, T0 + timedelta(hours=100))
    assert res["archived"] == 0 and res["decayed"] == 2
    got = {e.episode_id: e for e in rt.episodes.list("u1")}
    slow, fast = got[recalled.episode_id].strength, got[forgotten.episode_id].strength
    # MemoryBank's exp(-t / 5*S) would make the recalled one fade faster
    assert slow > fast
    assert fast == pytest.approx(math.exp(-100 / TAU), rel=1e-6)
    assert slow == pytest.approx(math.exp(-100 / (TAU * 5)) * (1 + 0.4), rel=1e-6)
    assert all(e.status == "closed" for e in got.values())


def test_a_faded_episode_is_archived_and_kept(memory: Memory) -> None:
    rt = memory.rt
    faint, strong = put(
        rt,
        episode(rt, "u1", "a passing remark about the weather in Lisbon", seq=0, salience=1),
        episode(rt, "u1", "the weather in Lisbon decided the wedding date", seq=10, salience=9),
    )
    later = T0 + timedelta(hours=400)  # faint: 1 * exp(-400/168) = 0.09 < 0.5; strong: 0.83
    memory.create_key("u1")  # a table outside the schema's: api_keys
    res = _maintain(memory, later)
    assert res["archived"] == 1
    got = {e.episode_id: e for e in rt.episodes.list("u1")}
    assert got[faint.episode_id].status == "archived"  # kept, with its text
    assert got[faint.episode_id].text == faint.text
    assert got[strong.episode_id].status == "closed"
    # every table is compacted, the ones outside the schema too
    assert {row["table"] for row in res["tables"]} >= {"episodes", "raw_turns", "api_keys"}
    listed = {e.episode_id: e.status for e in memory.episodes("u1")}  # what users see
    assert listed == {faint.episode_id: "archived", strong.episode_id: "closed"}

    # archived stays archived and is not counted twice
    again = _maintain(memory, later + timedelta(hours=1))
    assert again["archived"] == 0
    assert len(rt.episodes.list("u1")) == 2


def test_recall_through_search_keeps_an_episode_alive(memory: Memory) -> None:
    rt = memory.rt
    # three weeks in, the allergy is looked up: its last access moves to then
    looked_up = T0 + timedelta(weeks=3)
    kept, dropped = put(
        rt,
        told(rt, "u1", "the allergy to penicillin", salience=2),
        told(rt, "u1", "a film seen on a rainy sunday", salience=2),
    )
    hits = memory.search("u1", "penicillin allergy", k=1, now=looked_up)
    assert [(h.kind, h.episode_id) for h in hits] == [("turn", kept.episode_id)]
    rt.recalls.flush()  # the search noted the recall; the decay reads it
    res = _maintain(memory, looked_up + timedelta(days=2))
    got = {e.episode_id: e.status for e in rt.episodes.list("u1")}
    assert got == {kept.episode_id: "closed", dropped.episode_id: "archived"}
    assert res["archived"] == 1
