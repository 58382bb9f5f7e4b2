"""The recall log on a real LanceDB: the shipped search notes its recalls and
returns; a flush writes them, one update per table for each recall count;
a write that fails keeps its recalls for the next flush."""

from __future__ import annotations

import atexit
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from episodic.service.ingest import ingest_file
from episodic.service.search import MemoryOptions, search_memory
from episodic.service.segment import poll_stream
from storage.recalls import RecallLog
from tests.integration.helpers import make_memory, synthetic_stream, write_jsonl
from tests.integration.memory_items import T0, episode, put, reflection


def _slow_log(rt: Any, compact_at: int = 128) -> RecallLog:
    # no background write within the test: it flushes by hand
    log = RecallLog(rt.store, interval_s=3600, compact_at=compact_at)
    rt.recalls = log
    return log


def test_search_returns_before_its_recalls_are_written(tmp_path: Path) -> None:
    rt = make_memory(tmp_path / "home").rt
    for user in ("u1", "u2"):
        path = write_jsonl(tmp_path / f"{user}.jsonl", synthetic_stream(user=user))
        assert ingest_file(rt.raw, path, "jsonl").accepted > 0
        head = next(h.head_seq for h in rt.raw.streams(user))
        poll_stream(rt, user, "s1", head_seq=head, flush=True)
    rt.reflections.write([reflection(rt, "u1", "the user keeps deploying to staging with helm")])
    log = _slow_log(rt)
    eps = rt.store.table("episodes")
    before = eps.version
    hits = search_memory(rt, "u1", "helm staging deploy", MemoryOptions(k=3), now=T0)
    recalled = {h.episode_id for h in hits if h.kind == "turn" and h.episode_id}
    assert recalled and log.pending() >= len(recalled)
    assert eps.version == before  # nothing written on the query path
    assert all(e.recall_count == 0 for e in rt.episodes.list("u1"))

    later = T0 + timedelta(minutes=5)
    again = search_memory(rt, "u1", "helm staging deploy", MemoryOptions(k=3), now=later)
    twice = recalled & {h.episode_id for h in again if h.kind == "turn"}
    assert twice  # the same query finds the same episodes
    assert log.flush() >= len(recalled)
    assert log.pending() == 0
    by_id = {e.episode_id: e for e in rt.episodes.list("u1")}
    for eid in twice:
        assert by_id[eid].recall_count == 2  # both searches counted, in one write
        assert by_id[eid].last_recalled_at == later  # the latest of the window
    assert all(e.recall_count == 0 for e in rt.episodes.list("u2"))
    # one update per table and count: at most two counts (1 and 2) for episodes
    assert before < eps.version <= before + 2
    refl = rt.reflections.list("u1")[0]
    assert refl.recall_count == sum(h.kind == "reflection" for h in [*hits, *again])


def test_a_failed_write_keeps_its_recalls_for_the_next_flush(tmp_path: Path) -> None:
    rt = make_memory(tmp_path / "home").rt
    (ep,) = put(rt, episode(rt, "u1", "deploy with helm", seq=0))
    log = _slow_log(rt)
    log.note("episodes", "episode_id", "u1", [ep.episode_id], T0)
    log.note("no_such_table", "item_id", "u1", ["x"], T0)  # this write raises
    assert log.flush() == 1
    assert log.pending() == 1  # the failed one is noted again, not dropped
    assert rt.episodes.list("u1")[0].recall_count == 1
    atexit.unregister(log.flush)  # the bad write would be tried again at exit


def test_a_warm_search_reads_a_bounded_number_of_times_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The latency guard that does not time: a warm search reads no rows
    (each LanceDB read costs 3-40 ms at 1M turns, docs/perf/notes.md), after
    a recall flush it reads only the fragments the flush left, and it never
    commits."""
    from lance import LanceDataset
    from lancedb.table import LanceTable

    rt = make_memory(tmp_path / "home").rt
    path = write_jsonl(tmp_path / "u1.jsonl", synthetic_stream(user="u1"))
    ingest_file(rt.raw, path, "jsonl")
    poll_stream(rt, "u1", "s1", head_seq=next(h.head_seq for h in rt.raw.streams("u1")), flush=True)
    rt.reflections.write([reflection(rt, "u1", "the user keeps deploying to staging with helm")])
    _slow_log(rt)
    search_memory(rt, "u1", "helm staging deploy", MemoryOptions(), now=T0)  # reads the user
    calls: Counter[str] = Counter()
    for name in ("search", "count_rows", "update", "merge_insert", "add", "delete"):
        real = getattr(LanceTable, name)

        def counted(self, *a, _real=real, _name=name, **k):  # type: ignore[no-untyped-def]
            calls[_name] += 1
            return _real(self, *a, **k)

        monkeypatch.setattr(LanceTable, name, counted)
    for name in ("to_table", "scanner"):
        real_read = getattr(LanceDataset, name)

        def read(self, *a, _real=real_read, **k):  # type: ignore[no-untyped-def]
            calls["read"] += 1
            return _real(self, *a, **k)

        monkeypatch.setattr(LanceDataset, name, read)
    real_update = LanceDataset.update

    def update(self, *a, **k):  # type: ignore[no-untyped-def]
        calls["update"] += 1  # the recall flush writes through pylance
        return real_update(self, *a, **k)

    monkeypatch.setattr(LanceDataset, "update", update)
    hits = search_memory(rt, "u1", "helm staging deploy", MemoryOptions(), now=T0)
    assert hits
    assert calls["read"] == 0 and calls["search"] == 0 and calls["count_rows"] == 0, calls
    rt.recalls.flush()  # each table with a recall gains a fragment
    flushed = calls["update"]  # the flush's own writes: one per table
    search_memory(rt, "u1", "helm staging deploy", MemoryOptions(record=False), now=T0)
    assert 1 <= flushed <= 3 and calls["read"] <= flushed, calls
    assert calls["update"] == flushed, calls  # none by the searches
    assert not {"merge_insert", "add", "delete"} & set(calls), calls


def test_a_turn_added_by_another_writer_is_found_by_the_next_search(tmp_path: Path) -> None:
    """The working set follows the store: a write from another service on
    the same store adds a fragment, which the next search reads."""
    home = tmp_path / "home"
    reader, writer = make_memory(home), make_memory(home)
    _slow_log(reader.rt)
    writer.add("u1", [{"role": "user", "text": "we deploy with helm to staging"}])
    assert reader.search("u1", "helm staging", record=False)
    held = reader.search("u1", "zeppelin", record=False)  # held in memory now
    assert not any("zeppelin" in h.text for h in held)
    writer.add("u1", [{"role": "user", "text": "my zeppelin collection grew"}])
    hits = reader.search("u1", "zeppelin", record=False)
    assert hits and "zeppelin" in hits[0].text
    # nothing changed since: the same answer from memory
    again = reader.search("u1", "zeppelin", record=False)
    assert [h.item_id for h in again] == [h.item_id for h in hits]


def test_recall_writes_leave_the_table_compacted(tmp_path: Path) -> None:
    """Each recall update leaves a fragment; a flush past `compact_at`
    compacts, and no recall is lost to it."""
    COMPACT_AT = 16  # the default (128) would take 256 rounds

    rt = make_memory(tmp_path / "home").rt
    eps = put(rt, *[episode(rt, "u1", f"topic {i}", seq=10 * i) for i in range(3 * COMPACT_AT)])
    log = _slow_log(rt, COMPACT_AT)
    rounds = 2 * COMPACT_AT
    seen = []
    for i in range(rounds):  # one episode a round: the others' fragment stays
        log.note("episodes", "episode_id", "u1", [eps[i % len(eps)].episode_id], T0)
        log.flush()
        seen.append(rt.store.fragments("episodes"))
    assert max(seen) >= COMPACT_AT - 1, seen  # it did fragment ...
    assert all(n < COMPACT_AT for n in seen), seen  # ... and never stayed so
    counts = [e.recall_count for e in rt.episodes.list("u1")]
    assert sorted(counts) == [0] * (len(eps) - rounds) + [1] * rounds, counts  # none lost


def test_one_flush_writes_every_users_recalls_in_one_commit_each_on_their_own_rows(
    tmp_path: Path,
) -> None:
    rt = make_memory(tmp_path / "home").rt
    (a,) = put(rt, episode(rt, "u1", "deploy with helm", seq=0))
    (b,) = put(rt, episode(rt, "u2", "walk the dog", seq=0))
    log = _slow_log(rt)
    before = rt.store.table("episodes").version
    log.note("episodes", "episode_id", "u1", [a.episode_id], T0)
    log.note("episodes", "episode_id", "u2", [b.episode_id], T0)
    log.note("episodes", "episode_id", "u2", [a.episode_id], T0)  # not u2's: touches nothing
    assert log.flush() == 2
    assert rt.store.table("episodes").version == before + 1  # both users, one commit
    assert [e.recall_count for e in rt.episodes.list("u1")] == [1]
    assert [e.recall_count for e in rt.episodes.list("u2")] == [1]
