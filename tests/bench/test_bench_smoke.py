"""Each benchmark at a tiny size: the output has the promised shape and its
figures are sane. Never a wall-clock assertion: benchmarks measure."""

from __future__ import annotations

import math
import os
import time

import pytest

from tests.conftest import shared_data

pytestmark = pytest.mark.usefixtures("prefect_harness")


def _target_shape(res: dict) -> None:  # type: ignore[type-arg]
    assert res["machine"]["cpu_count"] >= 1
    for t in res["targets"].values():
        assert set(t) == {"value", "target", "met"}


def test_pipeline_reports_throughput_and_ratio() -> None:
    shared_data("dialseg711")
    from episodic.bench.pipeline import bench_pipeline

    res = bench_pipeline(turns=300, embedder="hash", users=3, repeats=2)
    assert res["turns"] == 300
    assert res["repeats"] == len(res["runs"]) == 2
    low, high = res["ratio_range"]
    assert low == res["ratio"] <= high  # the lower of two is the median reported
    assert sorted(r["ratio"] for r in res["runs"]) == [low, high]
    assert res["turns_per_s"] > 0 and res["embed_only_turns_per_s"] > 0
    assert math.isclose(
        res["ratio"], res["turns_per_s"] / res["embed_only_turns_per_s"], rel_tol=0.02, abs_tol=1e-3
    )
    assert res["episodes"] > 0
    cpu = res["cpu"]
    for phase in ("embed_only", "pipeline"):
        # the hash embedder takes a few ms: rounded to 2 places, it may read 0
        assert cpu[phase]["wall_s"] >= 0 and cpu[phase]["core_s"] >= 0
        busy = cpu[phase]["cores_busy"]
        assert busy is None or 0 <= busy <= (os.cpu_count() or 1) + 0.01
    assert cpu["pipeline"]["wall_s"] > 0 and cpu["pipeline"]["core_s"] > 0
    # the same clock as the ratio's seconds, and the rest is their difference
    assert cpu["pipeline"]["wall_s"] == res["seconds"]["pipeline"]
    assert cpu["embed_only"]["wall_s"] == res["seconds"]["embed_only"]
    rest = cpu["pipeline"]["core_s"] - cpu["embed_only"]["core_s"]
    assert math.isclose(cpu["rest_core_s"], rest, abs_tol=0.02)
    assert cpu["rest_core_s"] in [r["rest_core_s"] for r in res["runs"]]  # the median run's
    _target_shape(res)


def test_cpu_clock_counts_this_process_work() -> None:
    from episodic.bench.cpu_clock import CpuClock

    with CpuClock() as idle:
        time.sleep(0.3)
    with CpuClock() as busy:
        # spin for CPU time, not wall time: a loaded machine only stretches it
        start = time.process_time()
        while time.process_time() - start < 0.25:
            pass
    assert idle.wall_s >= 0.3
    assert busy.core_s >= 0.25 > idle.core_s
    if busy.cores_busy is not None:  # a machine with /proc/stat
        # the machine's busy core-seconds hold at least this process's own
        # (less a few 10 ms ticks of /proc/stat's granularity)
        assert busy.cores_busy * busy.wall_s >= 0.2


def test_reference_reports_a_speedup() -> None:
    shared_data("dialseg711")
    from episodic.bench.reference import bench_reference

    res = bench_reference(turns=200, embedder="hash", pipeline={"turns": 200, "turns_per_s": 50.0})
    assert res["reference_turns_per_s"] > 0 and res["reference_episodes"] >= 3
    # both figures are rounded in the report: allow for the rounding, not more
    assert math.isclose(
        res["speedup"], 50.0 / res["reference_turns_per_s"], rel_tol=0.02, abs_tol=0.006
    )
    _target_shape(res)


def test_incremental_compares_two_store_sizes() -> None:
    shared_data("dialseg711")
    from episodic.bench.incremental import bench_incremental

    res = bench_incremental(small=200, base=300, copies=1, polls=1)
    assert res["large"]["turns_held"] > res["small"]["turns_held"] >= 200
    assert res["large"]["episodes_held"] > 0
    assert res["ratio"] > 0
    _target_shape(res)


def test_retrieval_reports_latency_and_recall() -> None:
    from episodic.bench.retrieval import bench_size

    row = bench_size(3_000, queries=10)
    assert row["items_per_user"] == 30 and row["queries"] == 10
    assert row["shipped"]["mean_hits"] > 0  # the shipped search found something
    assert 0.0 <= row["ivf_hnsw_sq"]["recall_at_10"] <= 1.0
    for part in ("shipped", "bm25_turns", "cosine_turns_exact", "ivf_hnsw_sq"):
        assert row[part]["p95_ms"] >= row[part]["p50_ms"] > 0


def test_embed_backends_report_speed_and_pk() -> None:
    shared_data("dialseg711")
    from episodic.bench.embed_backends import bench_embed_backends

    res = bench_embed_backends(backends=("hash",), turns=100, limit=3)
    (row,) = res["backends"]
    assert row["turns_per_s"] > 0 and row["dialseg711_dialogues"] == 3
    assert 0.0 <= row["dialseg711_pk"] <= 1.0


def test_segment_bench_through_the_runner() -> None:
    from episodic.bench.run import run_bench

    res = run_bench("segment")
    assert {r["max_run_length"] for r in res["results"]} == {50, 150}
    assert all(r["median_us"] > 0 for r in res["results"])


@pytest.mark.slow
def test_memory_reports_peak_rss_per_size() -> None:
    shared_data("dialseg711")
    from episodic.bench.memory import bench_memory

    res = bench_memory(sizes=(200, 400))
    assert [r["turns"] for r in res["runs"]] == [200, 400]
    assert all(r["turns_processed"] == r["turns"] and r["peak_rss_mb"] > 50 for r in res["runs"])
    _target_shape(res)


def test_llm_counts_calls_per_step_and_a_cached_rerun_asks_nothing() -> None:
    path = shared_data("locomo", "locomo_dev5.json")
    from episodic.bench.llm import bench_llm

    res = bench_llm(path, max_turns=200, embedder="hash")
    assert res["turns"] >= 200 and res["episodes"] > 0 and res["unscored_episodes"] == 0
    assert res["calls"] == sum(s["calls"] for s in res["per_step"].values()) > 0
    assert res["calls_per_1000_turns"] == round(1000 * res["calls"] / res["turns"], 1)
    assert res["cached_rerun"]["calls"] == 0
    assert res["cached_rerun"]["cache_hits"] == res["calls"]
    # the guarded figures: the cases the rules were tuned on and the held-out ones;
    # cases written before their rules are reported (issue 28), not yet held to .9
    groups = res["fact_scenarios"]["by_written"]
    assert groups["after"]["recall"] >= 0.9 and groups["held-out"]["recall"] >= 0.9, groups
    assert groups["before"]["recall"] >= 0.30, groups["before"]  # floor of today's rules


def test_api_reports_both_loops_and_loses_nothing() -> None:
    from episodic.bench.api import bench_api

    res = bench_api(turns=1600, clients=2, batch=100, kills=0)
    assert res["accepted"] == 1600 and res["duplicates_reported"] == res["resent_turns"] > 0
    paced = res["paced"]
    assert paced["batches"] == 16 and paced["accepted"] == 1600 and paced["errors"] == 0
    assert 0 < paced["p50_ms"] <= paced["p99_ms"] <= paced["max_ms"]
    assert res["stored_turns"] == 3200 and (res["lost"], res["stored_twice"]) == (0, 0)
    _target_shape(res)
