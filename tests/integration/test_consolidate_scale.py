"""Quiet idle polls, the per-user Prefect concurrency slot and the per-user
fan-out, under Prefect's test harness on a real LanceDB. Run counts come from
the Prefect API, not from the flow's own report."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from prefect import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
from prefect.client.schemas.objects import State

from episodic.models import user_tag
from episodic.service.ingest import ingest_file
from flows.consolidate import consolidate
from flows.maintain import maintain
from flows.reflect import reflect
from storage.lease import LeaseBusy
from tasks.exclusion import limit_name, user_slot
from tests.integration.helpers import (
    held_elsewhere,
    make_memory,
    synthetic_stream,
    write_jsonl,
)

pytestmark = pytest.mark.usefixtures("prefect_harness")


def _ingest(rt: Any, tmp_path: Path, turns: list[dict[str, Any]], name: str) -> None:
    ingest_file(rt.raw, write_jsonl(tmp_path / name, turns), "jsonl")


def _summary(state: State[Any]) -> dict[str, Any]:
    """The flow's summary, out of the State a `return_state=True` call returns."""
    res = state.result()
    assert isinstance(res, dict)
    return res


def _runs_of(
    flow_run_id: UUID | None, *, settle: Callable[[list[Any]], bool] = lambda _: True
) -> tuple[list[Any], int]:
    """(task runs, artifact count) the Prefect API holds for one flow run.

    The server records task-run states from events, after the flow returns;
    this waits (bounded) until every run read is final and `settle` holds."""
    assert flow_run_id is not None
    f = FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
    deadline = time.monotonic() + 60
    with get_client(sync_client=True) as c:
        while True:
            tasks = c.read_task_runs(flow_run_filter=f)
            settled = settle(tasks) and all(t.state and t.state.is_final() for t in tasks)
            if settled or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        arts = c.read_artifacts(flow_run_filter=f)
    return tasks, len(arts)


def test_idle_poll_has_no_task_runs_and_no_artifact(tmp_path: Path) -> None:
    m = make_memory(tmp_path / "home")
    _ingest(m.rt, tmp_path, synthetic_stream(), "a.jsonl")
    busy = consolidate(user="u1", return_state=True, memory=m)  # leaves the last episode open
    tasks, arts = _runs_of(busy.state_details.flow_run_id, settle=lambda ts: len(ts) >= 2)
    assert busy.is_completed() and busy.message != "nothing to do"
    assert len(tasks) >= 2 and arts == 1  # the counts below can fail
    assert _summary(busy)["open_turns"] > 0  # an open episode, not idle yet
    for _ in range(2):
        idle = consolidate(user="u1", return_state=True, memory=m)
        assert idle.is_completed() and idle.message == "nothing to do"
        tasks, arts = _runs_of(idle.state_details.flow_run_id)
        assert tasks == [] and arts == 0
        assert _summary(idle)["turns_processed"] == 0
    # new turns make the next poll busy again; all-users polls are quiet too
    assert consolidate(return_state=True, memory=m).message == "nothing to do"
    more = synthetic_stream(start=None, stream="s2")
    _ingest(m.rt, tmp_path, more, "b.jsonl")
    again = consolidate(return_state=True, memory=m)
    assert again.message != "nothing to do"
    assert _summary(again)["turns_processed"] == len(more)


def test_user_slot_excludes_and_never_names_the_user() -> None:
    user = "alice@example.com"
    name = limit_name(user)
    assert user not in name and "alice" not in name and name.startswith("episodic-user-")
    assert limit_name("bob") != name
    with held_elsewhere(lambda: user_slot(user)):
        with pytest.raises(LeaseBusy):
            with user_slot(user, wait_s=2):
                pass
        with user_slot("bob", wait_s=10):  # another user is not blocked
            pass
    with user_slot(user, wait_s=30) as waited:
        assert waited < 30


def test_flow_waits_for_the_users_slot(tmp_path: Path) -> None:
    m = make_memory(tmp_path / "home", user_slot="prefect")
    _ingest(m.rt, tmp_path, synthetic_stream(), "a.jsonl")
    held = threading.Event()
    hold_s = 4.0
    released_at: list[float] = []

    def holder() -> None:
        with user_slot("u1"):
            held.set()
            time.sleep(hold_s)
            released_at.append(time.monotonic())

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(60)
    summary = consolidate(user="u1", flush=True, memory=m)
    done = time.monotonic()
    t.join(60)
    assert isinstance(summary, dict)
    assert released_at and done > released_at[0]  # it ran after the holder let go
    assert summary["turns_processed"] == len(synthetic_stream())


def _named(tasks: list[Any], prefix: str) -> bool:
    """Each of the three users' task runs of a step is recorded."""
    return sum(bool(t.name.startswith(prefix)) for t in tasks) >= 3


def test_fan_out_one_task_per_user_same_end_state(tmp_path: Path) -> None:
    users = ["u1", "u2", "u3"]
    m = make_memory(tmp_path / "fan")
    for u in users:
        _ingest(m.rt, tmp_path, synthetic_stream(user=u, n_per_topic=10), f"{u}.jsonl")
    state = consolidate(flush=True, return_state=True, memory=m)
    tasks, _ = _runs_of(
        state.state_details.flow_run_id,
        settle=lambda ts: sum(t.name.startswith("user-") for t in ts) >= 3,
    )
    per_user = [t for t in tasks if t.name.startswith("user-")]
    names = sorted(t.name for t in per_user)
    assert names == sorted(f"user-{user_tag(u)}" for u in users)
    assert not any(u in t.name for t in tasks for u in ("u1", "u2", "u3"))
    assert all(t.state.is_completed() for t in per_user)
    # fanned out `user_threads` (2) at a time: the first two overlapped, the
    # third waited for a free slot (memory grows with users at once)
    assert m.settings.user_threads == 2
    runs = sorted((t.start_time, t.end_time) for t in per_user)
    assert runs[1][0] < runs[0][1]
    assert runs[2][0] >= min(runs[0][1], runs[1][1])
    # the third user's turns were embedded while the first two consolidated,
    # each once (its poll found them stored)
    third = len(synthetic_stream(user="u3", n_per_topic=10))
    assert _summary(state)["embedded_ahead"] == third
    assert m.rt.store.table("turn_vectors").count_rows() == 3 * third
    # the same episodes as one user at a time
    for u in users:
        alone = make_memory(tmp_path / f"alone-{u}")
        _ingest(alone.rt, tmp_path, synthetic_stream(user=u, n_per_topic=10), f"x{u}.jsonl")
        consolidate(user=u, flush=True, memory=alone)
        want = [(e.first_seq, e.last_seq) for e in alone.rt.episodes.list(u)]
        got = [(e.first_seq, e.last_seq) for e in m.rt.episodes.list(u)]
        assert got == want and got
    # between the two groups the flow indexed the keys the third user's merges
    # join on (without, a merge joined the whole table), and the result is the same
    indexed = {ix.columns[0] for ix in m.rt.store.table("episodes").list_indices()}
    assert {"episode_id", "user_id"} <= indexed


def test_embedding_ahead_off_embeds_in_the_polls(tmp_path: Path) -> None:
    m = make_memory(tmp_path / "off", user_threads=1, embed_ahead=False)
    for u in ("u1", "u2"):
        _ingest(m.rt, tmp_path, synthetic_stream(user=u, n_per_topic=5), f"{u}.jsonl")
    summary = _summary(consolidate(flush=True, return_state=True, memory=m))
    assert summary["embedded_ahead"] == 0
    assert summary["turns_processed"] == m.rt.store.table("turn_vectors").count_rows() > 0


def test_default_takes_no_prefect_slot(tmp_path: Path) -> None:
    """The temporary API never expires a killed holder's lease: by default the
    flow leaves Prefect's limits alone, so a crash cannot strand a user."""
    m = make_memory(tmp_path / "home")
    _ingest(m.rt, tmp_path, synthetic_stream(user="carol"), "c.jsonl")
    summary = consolidate(user="carol", flush=True, memory=m)
    assert isinstance(summary, dict)
    assert summary["turns_processed"] > 0
    with get_client(sync_client=True) as c:
        names = {lim.name for lim in c.read_global_concurrency_limits(limit=200)}
    assert limit_name("carol") not in names


def test_reflect_and_maintain_name_user_task_runs_by_a_tag(tmp_path: Path) -> None:
    """As consolidate does: a user's task run is named by a hash, never the id."""
    users = ["u1", "u2", "u3"]
    m = make_memory(tmp_path / "home")
    for u in users:
        _ingest(m.rt, tmp_path, synthetic_stream(user=u), f"{u}.jsonl")
    consolidate(flush=True, memory=m)
    flow_runs = {
        "reflect": reflect(force=True, return_state=True, memory=m).state_details.flow_run_id,
        "decay": maintain(return_state=True, memory=m).state_details.flow_run_id,
    }
    for step, run_id in flow_runs.items():
        prefix = f"{step}-"
        named, _ = _runs_of(run_id, settle=functools.partial(_named, prefix=prefix))
        mine = sorted(t.name for t in named if t.name.startswith(prefix))
        assert mine == sorted(f"{prefix}{user_tag(u)}" for u in users), mine
