"""Search latency for one user among 100, at several store sizes, with a
BTree index on user_id as the prefilter, exact (flat) search beside an
IVF_HNSW_SQ ANN index, and the ANN's recall@10 against the exact answer.

Items are clustered like real memories (each user a handful of topics, each
item a noisy copy of its topic), since uniform random vectors flatter every
ANN index. This measures the storage query (vector top-10 with the user
prefilter), not the re-ranking and recall bookkeeping of `tasks.search`."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.corpus import machine, report, target

DIM = 384
USERS = 100
TOPICS = 8
TARGET_P50_MS = 20.0
SIZES = (10_000, 100_000, 1_000_000)


def _vectors(rng: np.random.Generator, centers: np.ndarray, n: int) -> np.ndarray:
    pick = rng.integers(0, len(centers), n)
    v = centers[pick] + rng.normal(0, 0.35 / np.sqrt(DIM), (n, DIM)).astype(np.float32) * 3
    unit: np.ndarray = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    return unit


def _build(db: Any, n: int, rng: np.random.Generator) -> tuple[Any, dict[str, np.ndarray]]:
    import pyarrow as pa
    from lancedb.index import BTree

    centers = rng.normal(size=(USERS, TOPICS, DIM)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=2, keepdims=True)
    schema = pa.schema(
        [
            ("item_id", pa.string()),
            ("user_id", pa.string()),
            ("vector", pa.list_(pa.float32(), DIM)),
        ]
    )
    tbl = db.create_table(f"items_{n}", schema=schema)
    per = n // USERS
    step = max(1, 100_000 // per)  # users per write: about 100k rows a write
    for u0 in range(0, USERS, step):
        ids, users, vecs = [], [], []
        for u in range(u0, min(USERS, u0 + step)):
            vecs.append(_vectors(rng, centers[u], per))
            users += [f"u{u:03d}"] * per
            ids += [f"u{u:03d}-{i}" for i in range(per)]
        flat = np.concatenate(vecs).reshape(-1)
        tbl.add(
            pa.Table.from_arrays(
                [
                    pa.array(ids),
                    pa.array(users),
                    pa.FixedSizeListArray.from_arrays(pa.array(flat), DIM),
                ],
                schema=schema,
            )
        )
    tbl.create_index("user_id", config=BTree())
    return tbl, {f"u{u:03d}": centers[u] for u in range(USERS)}


def _search(tbl: Any, q: np.ndarray, user: str, exact: bool) -> tuple[list[str], float]:
    from storage import filters

    t0 = time.perf_counter()
    query = tbl.search(q, vector_column_name="vector").distance_type("cosine")
    if exact:
        query = query.bypass_vector_index()
    rows = (
        query.where(filters.user(user), prefilter=True)
        .select(["item_id", "_distance"])
        .limit(10)
        .to_list()
    )
    return [r["item_id"] for r in rows], (time.perf_counter() - t0) * 1000


def _lat(ms: list[float]) -> dict[str, float]:
    s = sorted(ms)
    return {
        "p50_ms": round(statistics.median(s), 2),
        "p95_ms": round(s[int(0.95 * (len(s) - 1))], 2),
    }


def bench_size(n: int, queries: int = 100, seed: int = 0) -> dict[str, Any]:
    import lancedb

    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory(prefix="episodic-bench-ret-") as tmp:
        db = lancedb.connect(str(Path(tmp)))
        t0 = time.perf_counter()
        tbl, centers = _build(db, n, rng)
        build_s = time.perf_counter() - t0
        user = "u042"
        qs = _vectors(rng, centers[user], queries)
        for q in qs[:5]:  # warm caches
            _search(tbl, q, user, exact=True)
        exact = [_search(tbl, q, user, exact=True) for q in qs]
        t0 = time.perf_counter()
        tbl.create_index(metric="cosine", index_type="IVF_HNSW_SQ", vector_column_name="vector")
        index_s = time.perf_counter() - t0
        for q in qs[:5]:
            _search(tbl, q, user, exact=False)
        ann = [_search(tbl, q, user, exact=False) for q in qs]
    recall = float(
        np.mean(
            [
                len(set(a[0]) & set(e[0])) / max(1, len(e[0]))
                for a, e in zip(ann, exact, strict=True)
            ]
        )
    )
    return {
        "items": n,
        "items_per_user": n // USERS,
        "exact": _lat([e[1] for e in exact]),
        "ivf_hnsw_sq": {**_lat([a[1] for a in ann]), "recall_at_10": round(recall, 3)},
        "build_s": round(build_s, 1),
        "index_s": round(index_s, 1),
    }


def bench_retrieval(sizes: tuple[int, ...] = SIZES, max_build_s: float = 600.0) -> dict[str, Any]:
    """Sizes in order; a size whose predecessor took longer than `max_build_s`
    to build and index (scaled by the size ratio) is skipped, and said so."""
    rows: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    for n in sizes:
        if rows:
            prev = rows[-1]
            guess = (prev["build_s"] + prev["index_s"]) * n / prev["items"]
            if guess > max_build_s:
                skipped[str(n)] = (
                    f"building would take about {guess:.0f} s here (limit {max_build_s:.0f} s)"
                )
                continue
        rows.append(bench_size(n))
    res: dict[str, Any] = {
        "benchmark": "retrieval",
        "users": USERS,
        "runs": rows,
        "skipped": skipped,
    }
    at_100k = next((r for r in rows if r["items"] == 100_000), None)
    best = None
    if at_100k:
        best = min(at_100k["exact"]["p50_ms"], at_100k["ivf_hnsw_sq"]["p50_ms"])
    res["machine"] = machine()
    res["targets"] = {"p50_ms_at_100k": target(best, "<=", TARGET_P50_MS)}
    report("retrieval", res)
    return res
