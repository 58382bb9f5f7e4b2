"""Peak resident memory while consolidating N turns, at several N.

For each N a fresh store is filled by one child process (realistic turns, 20
users) and consolidated by another, which reports its own peak RSS
(VmHWM), so the ingest's memory does not count. The cheap hash embedder
stands in for MiniLM (the model's own ~0.3 GB would be the same at every N);
the question is whether anything held grows with N. Prefect's ephemeral API
runs in its own process and is not counted."""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from episodic.bench.corpus import machine, report, target
from episodic.bench.servers import run_checked

TARGET_MB = 1024.0  # issue 29: under 1 GB at 200k turns
SIZES = (50_000, 100_000, 200_000)


def _child(args: list[str], db: Path) -> dict[str, Any]:
    env = dict(
        os.environ, EPISODIC_DB_URI=str(db), EPISODIC_EMBEDDER="hash", EPISODIC_LLM="offline"
    )
    out = run_checked([sys.executable, "-m", "episodic.bench.memory", *args], env).stdout
    last: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return last


def peak_rss_mb() -> float:
    """This process's peak RSS. VmHWM, not ru_maxrss: Linux carries ru_maxrss
    over from the parent through fork and exec, so a child started by a big
    parent would report the parent's peak."""
    try:
        with open("/proc/self/status", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_memory(sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    rows = []
    for n in sizes:
        tmp = Path(tempfile.mkdtemp(prefix="episodic-bench-mem-"))
        try:
            _child(["ingest", str(n)], tmp / "lancedb")
            got = _child(["consolidate"], tmp / "lancedb")
            rows.append({"turns": n, **got})
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return summarise(rows)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The result over the runs (one per N, smallest first): the peak, the
    growth from the smallest N to the largest, and both beside their targets."""
    peaks = [r["peak_rss_mb"] for r in rows]
    growth = peaks[-1] / peaks[0] if peaks and peaks[0] else None
    res: dict[str, Any] = {
        "benchmark": "memory",
        "runs": rows,
        "peak_rss_mb": max(peaks) if peaks else None,
        "growth_first_to_last": round(growth, 3) if growth else None,
        "embedder": "hash (cheap vectors)",
        "machine": machine(),
    }
    res["targets"] = {
        "peak_rss_mb": target(res["peak_rss_mb"], "<=", TARGET_MB),
        # "flat": the largest N needs at most 1.25x the memory of the smallest
        "growth_first_to_last": target(growth, "<=", 1.25),
    }
    report("memory", res)
    return res


def _main(argv: list[str]) -> None:
    from episodic.config import apply_prefect_env, load_settings

    apply_prefect_env(quiet=True)
    from episodic.bench.corpus import open_memory

    with open_memory(load_settings()) as memory:  # the store EPISODIC_DB_URI names
        _step(memory, argv)


def _step(memory: Any, argv: list[str]) -> None:
    from episodic.bench.corpus import ingest, realistic_turns

    rt = memory.rt
    if argv[0] == "ingest":
        n = int(argv[1])
        for k, i in enumerate(range(0, n, 50_000)):  # bounded batches keep the builder small
            start = datetime(2025, 1, 6, tzinfo=UTC) + timedelta(days=120 * k)
            batch = realistic_turns(min(50_000, n - i), users=20, seed=i, start=start, tag=f"b{k}-")
            ingest(rt.raw, batch)
        rt.store.ensure_indexes()
        print(json.dumps({"ingested": rt.raw.count()}))
        return

    base = peak_rss_mb()
    t0 = time.perf_counter()
    summary = memory.consolidate(flush=True)
    seconds = time.perf_counter() - t0
    peak = peak_rss_mb()
    print(
        json.dumps(
            {
                "peak_rss_mb": round(peak, 1),
                "rss_before_mb": round(base, 1),
                "seconds": round(seconds, 1),
                "turns_processed": summary["turns_processed"],
                "episodes": summary["episodes_closed"],
                "load_avg_1m": machine().get("load_avg_1m"),  # the machine is shared
            }
        )
    )


if __name__ == "__main__":
    _main(sys.argv[1:])
