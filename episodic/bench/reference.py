"""The yardstick: the same realistic turns through seed 000's loop as written
(`Segmentor.observe`): per user, append the turn and its embedding (one encode
per turn) to the open segment first, then cut when the segment holds 15 turns
or when the cosine distance of the turn to the mean of the segment's last five
embeddings, itself included, exceeds 0.45; a cut closes the segment without
the new turn, which opens the next. Closing encodes the transcript's first 500
characters and adds one row to LanceDB. The seed's LLM calls (the
prediction-error check every 4th turn, salience, summary) are left out: no
network here, so the yardstick is faster than the seed and the speedup a
lower bound."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from episodic.bench.corpus import machine, realistic_turns, report, target

MAX_SEGMENT_TURNS = 15
SEMANTIC_SHIFT_THRESHOLD = 0.45
TARGET_SPEEDUP = 5.0
SEED_EMBEDDER = "minilm"  # seed 000 encodes with sentence-transformers all-MiniLM-L6-v2


def naive_loop(texts: list[tuple[str, str, str]], embedder: Any, db_dir: Path) -> dict[str, Any]:
    """texts: (user, role, text). Returns episodes written and seconds."""
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(db_dir))
    schema = pa.schema(
        [
            ("episode_id", pa.string()),
            ("user_id", pa.string()),
            ("vector", pa.list_(pa.float32(), embedder.dim)),
            ("text", pa.string()),
            ("n_turns", pa.int64()),
        ]
    )
    table = db.create_table("episodes", schema=schema)
    open_: dict[str, tuple[list[str], list[np.ndarray]]] = {}
    written = 0

    def close(user: str, turns: list[str]) -> None:
        nonlocal written
        transcript = "\n".join(turns)
        vec = embedder.embed([transcript[:500]])[0]
        row = {
            "episode_id": f"{user}-{written}",
            "user_id": user,
            "vector": vec.tolist(),
            "text": transcript,
            "n_turns": len(turns),
        }
        table.add([row])
        written += 1

    t0 = time.perf_counter()
    for user, role, text in texts:
        turns, embeds = open_.setdefault(user, ([], []))
        emb = embedder.embed([text])[0]  # one turn at a time, as the seed does
        turns.append(f"{role}: {text}")  # the seed appends first, then compares
        embeds.append(emb)
        cut = len(turns) >= MAX_SEGMENT_TURNS
        if not cut:
            running = np.mean(embeds[-5:], axis=0)
            cos = float(
                np.dot(running, emb) / (np.linalg.norm(running) * np.linalg.norm(emb) + 1e-9)
            )
            cut = 1.0 - cos > SEMANTIC_SHIFT_THRESHOLD
        if cut:
            if len(turns) > 1:  # the seed's close_and_persist skips an empty segment
                close(user, turns[:-1])
            del turns[:-1]
            del embeds[:-1]
    for user, (turns, _) in open_.items():
        if turns:
            close(user, turns)
    return {"episodes": written, "seconds": time.perf_counter() - t0}


def _seed_loop(items: list[Any], embedder: str) -> tuple[dict[str, Any], str]:
    from episodic.embed import make_embedder

    emb = make_embedder(embedder)
    emb.embed(["warm up"])
    with tempfile.TemporaryDirectory(prefix="episodic-bench-ref-") as tmp:
        out = naive_loop([(t.user_id, t.role, t.text) for t in items], emb, Path(tmp))
    return out, emb.name


def bench_reference(
    turns: int = 20_000,
    embedder: str = SEED_EMBEDDER,
    pipeline: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The seed loop with the seed's own model (sentence-transformers fp32),
    the pipeline's figure beside it (its default embedder; run here unless
    given), and, when the two embedders differ, the seed loop again with the
    pipeline's embedder: the speedup that the loop alone buys."""
    if pipeline is None or pipeline.get("turns") != turns:
        from episodic.bench.pipeline import bench_pipeline

        pipeline = bench_pipeline(turns=turns)
    items = realistic_turns(turns)
    out, name = _seed_loop(items, embedder)
    ref_tps = len(items) / out["seconds"]
    speedup = float(pipeline["turns_per_s"]) / ref_tps
    same: dict[str, Any] = {}
    setting = pipeline.get("embedder_setting")
    if setting and setting != embedder:
        again, _ = _seed_loop(items, setting)
        same_tps = len(items) / again["seconds"]
        same = {
            "same_embedder_reference_turns_per_s": round(same_tps, 1),
            "same_embedder_speedup": round(float(pipeline["turns_per_s"]) / same_tps, 2),
        }
    res: dict[str, Any] = {
        "benchmark": "reference",
        "turns": len(items),
        "embedder": name,
        "pipeline_embedder": pipeline.get("embedder"),
        "reference_turns_per_s": round(ref_tps, 1),
        "reference_seconds": round(out["seconds"], 2),
        "reference_episodes": out["episodes"],
        "reference_turns": len(items),
        "reference_episodes_per_1000_turns": round(1000 * out["episodes"] / len(items), 1),
        "pipeline_turns_per_s": pipeline["turns_per_s"],
        "speedup": round(speedup, 2),
        **same,
        "machine": machine(),
    }
    res["targets"] = {"speedup": target(speedup, ">=", TARGET_SPEEDUP)}
    report("reference", res)
    return res
