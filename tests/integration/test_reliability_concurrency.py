"""Concurrency: two consolidations of one user at once, an ingest during a
consolidation, searches during a consolidation.

The consolidations run as child processes of the reliability fork server
(reliability_support.ForkServer); the ingest and the searches run in this
process at the same time, against the same LanceDB directory.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.reliability_support import (
    SETTINGS,
    TWO_STREAMS,
    Check,
    ChildResult,
    ForkServer,
    check_invariants,
    final_state,
    forkserver_for,
    open_repos,
    record,
    use_home,
    write_jsonl,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    yield from forkserver_for(tmp_path_factory, "forks")


def ingested(home: Path, turns: list[dict[str, Any]], name: str = "in.jsonl") -> Path:
    from episodic.service.ingest import ingest_file

    rep = ingest_file(open_repos(home).raw, write_jsonl(home.parent / name, turns), "jsonl")
    assert rep.rejected == 0
    return home


@pytest.fixture(scope="module")
def reference(server: ForkServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = ingested(tmp_path_factory.mktemp("ref") / "home", TWO_STREAMS)
    (res,) = server.run({"home": home, "settings": SETTINGS})
    assert res.status == 0, res.log[-3000:]
    return final_state(open_repos(home), "u1")


def in_background(
    server: ForkServer, job: dict[str, Any]
) -> tuple[threading.Thread, list[ChildResult]]:
    box: list[ChildResult] = []
    th = threading.Thread(target=lambda: box.extend(server.run(job)))
    th.start()
    return th, box


def _record(kind: str, check: Check, **figures: Any) -> None:
    """One trial's figures: what the invariants counted, and `figures`."""
    lost, dupes = check.lost, check.duplicate_rows
    record("concurrency", kind=kind, trials=1, turns_lost=lost, duplicate_rows=dupes, **figures)


def test_two_consolidations_at_once_equal_one(
    server: ForkServer, reference: dict[str, Any], tmp_path: Path
) -> None:
    home = ingested(tmp_path / "home", TWO_STREAMS)
    job = {"home": home, "settings": SETTINGS}
    a, b = server.run(job, job)
    assert a.status == 0 and b.status == 0, (a.log[-2000:], b.log[-2000:])
    repos = open_repos(home)
    check = check_invariants(repos, "u1")
    assert check.ok and check.covered == check.turns == len(TWO_STREAMS), check
    assert final_state(repos, "u1") == reference
    assert a.summary and b.summary
    closed = a.summary["episodes_closed"] + b.summary["episodes_closed"]
    assert closed == len(reference["episodes"])  # one did the work, the other found none
    _record("two-consolidations", check, state_mismatches=0)


def test_ingest_during_consolidation_loses_nothing(
    server: ForkServer, reference: dict[str, Any], tmp_path: Path
) -> None:
    from episodic.service.ingest import ingest_file

    half = len(TWO_STREAMS) // 3
    home = ingested(tmp_path / "home", TWO_STREAMS[:half])
    raw = open_repos(home).raw
    th, box = in_background(server, {"home": home, "settings": SETTINGS, "flush": False})
    appended = 0
    for upto in range(half + 7, len(TWO_STREAMS) + 7, 7):  # the file grows while the flow runs
        path = write_jsonl(tmp_path / "in.jsonl", TWO_STREAMS[: min(upto, len(TWO_STREAMS))])
        appended += ingest_file(raw, path, "jsonl").accepted
    th.join()
    assert box[0].status == 0, box[0].log[-2000:]
    assert appended == len(TWO_STREAMS) - half
    # the next poll picks up whatever the running one did not see
    (res,) = server.run({"home": home, "settings": SETTINGS})
    assert res.status == 0, res.log[-2000:]
    repos = open_repos(home)
    check = check_invariants(repos, "u1")
    assert check.ok and check.covered == check.turns == len(TWO_STREAMS), check
    got = final_state(repos, "u1")
    # salience may differ: novelty is measured against the episodes scored before
    assert [e[:4] for e in got["episodes"]] == [e[:4] for e in reference["episodes"]]
    assert got["facts"] == reference["facts"]
    seen = (box[0].summary or {}).get("turns_processed", 0)
    _record(
        "ingest-during-consolidation",
        check,
        turns_appended_during=appended,
        turns_seen_by_running_poll=seen,
    )


def test_searches_during_consolidation_see_whole_episodes(
    server: ForkServer, reference: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = ingested(tmp_path / "home", TWO_STREAMS)
    memory = use_home(monkeypatch, home)
    rt = memory.rt
    th, box = in_background(server, {"home": home, "settings": SETTINGS})
    searches = returned = half_written = 0
    queries = ["dog Rex", "Berlin Acme", "neovim vim", "Paris move", "coffee", "Japan trip"]
    while th.is_alive() or searches < 5:
        hits = memory.search("u1", queries[searches % len(queries)])  # records recalls, too
        searches += 1
        # the episodes the turn hits came from, as the search read them
        ids = sorted({h.episode_id for h in hits if h.kind == "turn" and h.episode_id})
        for e in rt.episodes.by_ids("u1", ids):
            returned += 1
            whole = (
                e.turn_ids
                and e.n_turns == len(e.turn_ids)
                and e.first_seq <= e.last_seq
                and e.last_seq - e.first_seq + 1 == e.n_turns
                and e.text
            )
            half_written += 0 if whole else 1
        time.sleep(0.05)
    th.join()
    assert box[0].status == 0, box[0].log[-2000:]
    assert half_written == 0
    assert returned > 0  # the searches did see episodes while they were being written
    repos = open_repos(home)
    check = check_invariants(repos, "u1")
    assert check.ok and check.covered == check.turns, check
    assert final_state(repos, "u1") == reference  # recall writes did not disturb the flow
    record(
        "concurrency",
        kind="search-during-consolidation",
        trials=1,
        searches=searches,
        episodes_returned=returned,
        half_written=half_written,
        duplicate_rows=check.duplicate_rows,
    )


def test_two_ingests_into_one_stream_get_distinct_seqs(tmp_path: Path) -> None:
    """Two harnesses appending to the same stream at once (two stores, as two
    processes would have): every turn gets its own seq, the head counts them all."""
    from episodic.service.ingest import ingest_file
    from storage.db import Store
    from storage.raw import RawLog

    uri = str(tmp_path / "home" / "lancedb")
    logs = [RawLog(Store(uri)), RawLog(Store(uri))]
    files = []
    for k in range(2):
        rows = [dict(t, text=f"{t['text']} from writer {k}") for t in TWO_STREAMS[:30]]
        files.append(
            [write_jsonl(tmp_path / f"w{k}-{j}.jsonl", rows[j * 6 : j * 6 + 6]) for j in range(5)]
        )

    def writer(k: int) -> None:
        for path in files[k]:
            ingest_file(logs[k], path, "jsonl")

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    heads = {h.stream_id: h.head_seq for h in logs[0].streams("u1")}
    assert logs[0].count("u1") == 60
    seen = 0
    for s in heads:
        mine = [t.seq for t in logs[0].read("u1", s, -1, 10**6)]
        assert sorted(mine) == list(range(len(mine))), f"{s}: seqs {sorted(mine)}"
        assert heads[s] == len(mine) - 1
        seen += len(mine)
    record(
        "concurrency",
        kind="two-ingests-one-stream",
        trials=1,
        turns_lost=60 - seen,
        duplicate_rows=0,
    )
