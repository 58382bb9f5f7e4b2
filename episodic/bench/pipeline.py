"""End-to-end consolidation throughput beside embedding-only throughput.

The same realistic turns are embedded alone (same embedder, same batches as a
poll), then run through the consolidate flow (read, embed, segment, write
episodes and checkpoints, salience, facts, reflection) with the offline
provider. Model loading and the start of Prefect's ephemeral API are warmed up
outside both timings; ingest is timed apart. The embedder is the default
(`EPISODIC_EMBEDDER`'s default) unless named. Three runs, each on a fresh
store; the median run is reported, every run's ratio beside it. Beside the
seconds, each phase's core-seconds and how busy the cores were (`cpu`): with
the embedder filling every core, the ratio is bound by what the rest costs
in core-seconds (`rest_core_s`), not by waiting."""

from __future__ import annotations

from typing import Any

from episodic.bench.corpus import bench_env, ingest, machine, realistic_turns, report, target
from episodic.bench.cpu_clock import CpuClock
from episodic.config import Settings

TARGET_RATIO = 0.85


DEFAULT_EMBEDDER: str = Settings.model_fields["embedder"].default


def bench_pipeline(
    turns: int = 20_000, embedder: str = DEFAULT_EMBEDDER, users: int = 10, repeats: int = 3
) -> dict[str, Any]:
    """`repeats` times on a fresh store each: on a shared 2-core VM one run's
    ratio moved by .15 between identical runs (docs/perf/notes.md), so the
    figure is the median run's, with the range beside it."""
    runs = [_one_run(turns, embedder, users) for _ in range(max(1, repeats))]
    runs.sort(key=lambda r: r["ratio"])
    res = runs[(len(runs) - 1) // 2]  # the median run (the lower one of an even count)
    res["repeats"] = len(runs)
    res["ratio_range"] = [runs[0]["ratio"], runs[-1]["ratio"]]
    res["runs"] = [
        {
            "ratio": r["ratio"],
            "seconds": r["seconds"],
            "rest_core_s": r["cpu"]["rest_core_s"],
            "load_avg_1m": r["machine"]["load_avg_1m"],
        }
        for r in runs
    ]
    res["targets"] = {"ratio": target(res["ratio"], ">=", TARGET_RATIO)}
    report("pipeline", res)
    return res


def _one_run(turns: int, embedder: str, users: int) -> dict[str, Any]:
    with bench_env(embedder) as memory:
        rt = memory.rt
        items = realistic_turns(turns, users=users)
        ingest_s = ingest(rt.raw, items)
        rt.store.ensure_indexes()
        texts = [t.text for t in items]
        batch = max(1, rt.settings.batch_turns)
        rt.embedder.embed(texts[:64])  # load the model
        memory.consolidate("nobody")  # start Prefect's API

        with CpuClock() as embed_clock:
            for i in range(0, len(texts), batch):
                rt.embedder.embed(texts[i : i + batch])
        embed_s = embed_clock.wall_s

        with CpuClock() as pipe_clock:
            summary = memory.consolidate(flush=True)
        pipe_s = pipe_clock.wall_s

    tps = len(items) / pipe_s
    etps = len(items) / embed_s
    return {
        "benchmark": "pipeline",
        "turns": len(items),
        "users": users,
        "embedder": rt.embedder.name,
        "embedder_setting": embedder,
        "turns_per_s": round(tps, 1),
        "embed_only_turns_per_s": round(etps, 1),
        "ratio": round(tps / etps, 3),
        "seconds": {
            "pipeline": round(pipe_s, 2),
            "embed_only": round(embed_s, 2),
            "ingest": round(ingest_s, 2),
        },
        "episodes": summary["episodes_closed"],
        "fact_events": summary["fact_events"],
        "reflections": summary["reflections"],
        "stages": summary["stages"],  # where the pipeline's time went
        # bound by CPU when the embedder fills the cores: the rest costs core-seconds
        "cpu": {
            "embed_only": embed_clock.as_dict(),
            "pipeline": pipe_clock.as_dict(),
            "rest_core_s": round(pipe_clock.core_s - embed_clock.core_s, 2),
        },
        "machine": machine(),
    }
