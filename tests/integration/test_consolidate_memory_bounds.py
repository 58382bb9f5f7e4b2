"""What keeps a consolidation's memory from growing with the user's history
(docs/perf/notes.md, memory): steps learn which episodes to work on from
their ids and read the rows a bounded window at a time, reflection's whole
read leaves the heavy columns out, and a user reflected but never searched
is not kept in the search's working set. Real store, no stand-ins."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from episodic.models import Episode, now_utc
from episodic.service.reflect import reflect_if_due
from episodic.vocab import FactsState
from tests.integration.helpers import make_memory
from tests.integration.memory_items import episode, put, told

THEME = [
    "Rex the dog limped after the park walk, so we booked the vet clinic",
    "the vet clinic moved Rex's appointment to Thursday morning",
    "Rex needs his vaccines renewed at the vet clinic before the trip",
]


def _mixed(rt, user: str) -> list[Episode]:  # type: ignore[no-untyped-def]
    """Episodes on two streams, out of time order, some unscored, some with
    facts done, one with a saved plan."""
    base = now_utc() - timedelta(days=1)
    out = []
    for i in range(12):
        e = episode(
            rt,
            user,
            f"note {i} about the garden",
            seq=10 * (11 - i),
            stream=f"s{i % 2}",
            closed_at=base + timedelta(minutes=7 * ((i * 5) % 12)),
        )
        upd: dict[str, object] = {}
        if i % 3 == 0:
            upd |= {"salience_source": "", "salience": 0}
        if i % 4 == 1:
            upd |= {"facts_state": FactsState.DONE, "fact_plan": "[]"}
        if i == 5:
            upd |= {"facts_state": FactsState.PLANNED, "fact_plan": "[]"}
        out.append(e.model_copy(update=upd))
    return put(rt, *out)


def test_id_reads_name_the_same_episodes_in_the_same_order(tmp_path: Path) -> None:
    rt = make_memory(tmp_path / "home").rt
    _mixed(rt, "u1")
    _mixed(rt, "u2")  # another user's episodes never come back
    assert rt.episodes.unscored_ids("u1") == [e.episode_id for e in rt.episodes.unscored("u1")]
    pending = rt.episodes.facts_pending("u1")
    pending.sort(key=lambda e: (e.started_at, e.stream_id, e.first_seq))
    ids = rt.episodes.facts_pending_ids("u1")
    assert ids == [e.episode_id for e in pending] and len(ids) == 10
    # a window read gives the whole rows, in the order asked
    window = rt.episodes.in_order("u1", ids[3:7])
    assert window == pending[3:7]


def test_reflection_reads_no_centroids_or_plans(tmp_path: Path) -> None:
    rt = make_memory(tmp_path / "home").rt
    whole = {e.episode_id: e for e in _mixed(rt, "u1") if e.salience_source}
    brief = rt.episodes.scored_since("u1", None)
    assert sorted(e.episode_id for e in brief) == sorted(whole)
    for e in brief:
        assert e.centroid == [] and e.fact_plan == ""
        same = whole[e.episode_id].model_copy(update={"centroid": [], "fact_plan": ""})
        assert e == same  # everything else as stored


def test_reflection_keeps_only_searched_users_in_the_working_set(tmp_path: Path) -> None:
    rt = make_memory(tmp_path / "home").rt
    closed = now_utc() - timedelta(hours=1)
    for user in ("quiet", "searched"):
        put(rt, *(told(rt, user, THEME[i % 3], salience=10, closed_at=closed) for i in range(15)))
    with rt.working.user("searched"):
        pass  # the API searched this user: its working set stays warm
    for user in ("quiet", "searched"):
        run = reflect_if_due(rt, user)
        assert run["due"] is True and run["questions"] >= 1  # the evidence search ran
    assert not rt.working.holds("quiet")
    assert rt.working.holds("searched")
