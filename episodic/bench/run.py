"""Benchmarks: each prints its figures beside its target (on stderr) and
returns a JSON-able dict. They measure and report; nothing here fails on a
slow machine. One module per benchmark: flows/bench_*.py."""

from __future__ import annotations

from typing import Any

NAMES = (
    "segment",
    "pipeline",
    "incremental",
    "retrieval",
    "memory",
    "reference",
    "embed-backends",
    "streams",
    "api",
    "hook",
)


def run_bench(
    name: str, turns: int | None = None, workers: tuple[int, ...] = (1, 2)
) -> dict[str, Any]:
    """`turns` scales the benchmarks built on realistic turns (pipeline,
    reference, embed-backends) and the memory sizes; None keeps the defaults.
    `workers` are the worker counts of `scale-out` (not part of `all`: it
    starts PostgreSQL, a Prefect server and workers). `embed-default` (not
    part of `all` either: both embedders over every dev set) decides the
    default embedder."""
    if name == "scale-out":
        from episodic.bench.scale_out import scale_out

        return scale_out(workers) if turns is None else scale_out(workers, turns=turns)
    if name == "segment":
        from episodic.bench.corpus import machine, report, target
        from episodic.bench.segment_bench import TARGET_US, bench_segment

        res = bench_segment(caps=(50, 150))
        res["machine"] = machine()
        cap50 = next((r for r in res["results"] if r["max_run_length"] == 50), None)
        res["targets"] = {
            "median_us_cap50": target(cap50["median_us"] if cap50 else None, "<=", TARGET_US)
        }
        report("segment", res)
        return res
    if name == "hook":
        from episodic.bench.hook import bench_hook

        return bench_hook()
    if name == "pipeline":
        from episodic.bench.pipeline import bench_pipeline

        return bench_pipeline() if turns is None else bench_pipeline(turns=turns)
    if name == "reference":
        from episodic.bench.reference import bench_reference

        return bench_reference() if turns is None else bench_reference(turns=turns)
    if name == "incremental":
        from episodic.bench.incremental import bench_incremental

        if turns is None:
            return bench_incremental()
        return bench_incremental(small=max(200, turns // 10), base=turns, copies=3)
    if name == "retrieval":
        from episodic.bench.retrieval import bench_retrieval

        return bench_retrieval() if turns is None else bench_retrieval(sizes=(turns,))
    if name == "memory":
        from episodic.bench.memory import bench_memory

        return bench_memory() if turns is None else bench_memory(sizes=(turns, 2 * turns))
    if name == "streams":
        from episodic.bench.streams import SIZES, bench_streams

        # --turns caps the largest number of streams (a smoke run)
        return bench_streams(SIZES if turns is None else tuple(n for n in SIZES if n <= turns))
    if name == "llm":
        from episodic.bench.llm import bench_llm
        from episodic.config import load_settings

        # an OpenAI-compatible server when configured (the local model), else offline
        s = load_settings()
        return bench_llm(max_turns=turns, base_url=s.llm_base_url if s.llm == "openai" else None)
    if name == "api":
        from episodic.bench.api import bench_api

        return bench_api() if turns is None else bench_api(turns=turns)
    if name == "embed-backends":
        from episodic.bench.embed_backends import bench_embed_backends

        return bench_embed_backends() if turns is None else bench_embed_backends(turns=turns)
    if name == "embed-default":
        from episodic.bench.embed_default import bench_embed_default

        return bench_embed_default() if turns is None else bench_embed_default(turns=turns)
    if name == "all":
        out: dict[str, Any] = {}
        for n in NAMES:
            if n == "reference":
                from episodic.bench.reference import bench_reference

                kw: dict[str, Any] = {"pipeline": out.get("pipeline")}
                if turns is not None:
                    kw["turns"] = turns
                out[n] = bench_reference(**kw)
            else:
                out[n] = run_bench(n, turns)
        return out
    known = ", ".join((*NAMES, "all", "scale-out", "embed-default"))
    raise SystemExit(f"unknown benchmark {name!r}; known: {known}")
