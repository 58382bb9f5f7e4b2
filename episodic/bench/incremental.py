"""The time of a poll that brings 100 new turns to one user, when the store
holds about 1,000 turns and about 200,000.

Building 200,000 consolidated turns through the flow would take longer than a
benchmark should, so the big store is made in bulk: `base` realistic turns
(10 users) are consolidated for real with the cheap hash embedder, then every
table is copied `copies` times under renamed users and ids (rows appended in
one write per table), then indexed and compacted as the maintain flow would.
The polled user's own history is real; the rest is the same data under other
users. Each poll is timed through the consolidate flow (Prefect included,
its API already started); the median of `polls` polls is reported."""

from __future__ import annotations

import statistics
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from episodic.bench.corpus import bench_env, ingest, machine, realistic_turns, report, target

if TYPE_CHECKING:
    from episodic.service.memory import Memory

TARGET_RATIO = 1.5
POLL_USER = "user-000"


def clone_users(store: Any, copies: int) -> None:
    """Append `copies` renamed copies of every table's rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for name in store.table_names():
        tbl = store.table(name)
        if tbl.count_rows() == 0:
            continue
        data = tbl.to_arrow()
        idcols = [
            f.name
            for f in data.schema
            if pa.types.is_string(f.type)
            and (f.name in ("key", "user_id") or f.name.endswith("_id"))
        ]
        for c in range(1, copies + 1):
            out = data
            for col in idcols:
                arr = data[col]
                renamed = pc.binary_join_element_wise(f"c{c}-", arr, "")
                out = out.set_column(
                    out.schema.get_field_index(col),
                    col,
                    pc.if_else(pc.equal(arr, ""), arr, renamed),
                )
            tbl.add(out)


def _poll_times(memory: Memory, n_polls: int, start: Any) -> list[float]:
    times = []
    for i in range(n_polls):
        new = realistic_turns(100, users=1, streams=1, seed=100 + i, start=start, tag=f"poll{i}-")
        start = new[-1].event_ts + timedelta(minutes=5)
        memory.rt.raw.append(new)
        t0 = time.perf_counter()
        res = memory.consolidate(POLL_USER)
        times.append(time.perf_counter() - t0)
        assert res["turns_processed"] == 100, res["turns_processed"]
    return times


def _store_case(base: int, copies: int, polls: int) -> dict[str, Any]:
    from episodic.service.maintain import upkeep

    with bench_env("hash") as memory:
        rt = memory.rt
        items = realistic_turns(base, users=10, streams=1)
        ingest(rt.raw, items)
        t0 = time.perf_counter()
        memory.consolidate(flush=False)
        consolidate_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        if copies:
            clone_users(rt.store, copies)
        rt.store.ensure_indexes()
        upkeep(rt, keep_versions=timedelta(0))
        build_s = time.perf_counter() - t0
        held = rt.raw.count()
        last = max(t.event_ts for t in items if t.user_id == POLL_USER)
        times = _poll_times(memory, polls, last + timedelta(hours=1))
        return {
            "turns_held": held,
            "episodes_held": rt.store.count("episodes"),
            "poll_seconds": [round(t, 3) for t in times],
            "poll_median_s": round(statistics.median(times), 3),
            "consolidate_base_s": round(consolidate_s, 1),
            "clone_and_index_s": round(build_s, 1),
        }


def bench_incremental(
    small: int = 1_000, base: int = 10_000, copies: int = 19, polls: int = 3
) -> dict[str, Any]:
    s = _store_case(small, 0, polls)
    b = _store_case(base, copies, polls)
    ratio = b["poll_median_s"] / s["poll_median_s"]
    res: dict[str, Any] = {
        "benchmark": "incremental",
        "small": s,
        "large": b,
        "ratio": round(ratio, 3),
        "embedder": "hash (cheap vectors: what may grow is the cost beside embedding)",
        "machine": machine(),
    }
    res["targets"] = {"large_over_small": target(ratio, "<=", TARGET_RATIO)}
    report("incremental", res)
    return res
