"""Embedding backends side by side: turns per second and the DialSeg711 Pk of
the full detector with each, so that quality can be traded for speed with
numbers in hand. One-time costs (ONNX export and quantization, model2vec
distillation, model load) are paid before the timing and reported apart."""

from __future__ import annotations

import time
from typing import Any

from episodic.bench.corpus import data_dir, machine, realistic_turns, report
from episodic.embed import Embedder

BACKENDS = ("minilm", "onnx-int8", "static")


def throughput(emb: Embedder, turns: int, batch: int = 2_000) -> tuple[float, float]:
    """(turns per second, setup seconds) on `turns` realistic turns; the setup
    (export, distillation or load) is paid by a first small call, timed apart."""
    texts = [t.text for t in realistic_turns(turns)]
    t0 = time.perf_counter()
    emb.embed(texts[:8])  # export, distil or load: once per machine or process
    setup_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i in range(0, len(texts), batch):
        emb.embed(texts[i : i + batch])
    return len(texts) / (time.perf_counter() - t0), setup_s


def bench_backend(name: str, turns: int, limit: int | None, batch: int = 2_000) -> dict[str, Any]:
    from episodic.bench.segment_eval import run_segment_eval
    from episodic.embed import make_embedder

    emb = make_embedder(name)
    turns_per_s, setup_s = throughput(emb, turns, batch)
    path = data_dir() / "dialseg711" / "dialseg_711.json"
    pk = wd = None
    n_dialogues = 0
    if path.exists():
        ev = run_segment_eval("dialseg711", str(path), emb, limit=limit)
        pk, wd, n_dialogues = ev["pk"], ev["windowdiff"], ev.get("n_dialogues", 0)
    return {
        "backend": name,
        "model": emb.name,
        "turns_per_s": round(turns_per_s, 1),
        "setup_s": round(setup_s, 1),
        "dialseg711_pk": None if pk is None else round(pk, 4),
        "dialseg711_windowdiff": None if wd is None else round(wd, 4),
        "dialseg711_dialogues": n_dialogues,
    }


def bench_embed_backends(
    backends: tuple[str, ...] = BACKENDS, turns: int = 5_000, limit: int | None = None
) -> dict[str, Any]:
    rows = [bench_backend(b, turns, limit) for b in backends]
    base = next((r for r in rows if r["backend"] == "minilm"), None)
    if base:
        for r in rows:
            r["speed_vs_minilm"] = round(r["turns_per_s"] / base["turns_per_s"], 2)
    res: dict[str, Any] = {
        "benchmark": "embed-backends",
        "turns": turns,
        "backends": rows,
        "machine": machine(),
        "targets": {},
    }
    report("embed-backends", res)
    return res
