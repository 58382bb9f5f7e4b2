"""Micro-benchmark of the detector's per-turn update, embedding excluded.

Vectors are precomputed, clustered and unit-norm, so the figure is the
detector alone. The first rows time the default detector (the shipped
combiner: the learned projection, its online features, the stream-adaptive
decision, every hard signal, the record); the `semantic_rule` rows time the
detector without the combiner, with every soft signal voting (its own BOCPD on
a sign projection). Target: median <= 60 us per turn (issue 27), printed
beside the figure, never asserted in a test: the machine is shared.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from episodic.segment.detector import Detector, DetectorConfig
from episodic.segment.types import SegTurn

TARGET_US = 60


def _turns(dims: int, n_turns: int, seed: int) -> list[SegTurn]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((8, dims))
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    turns, topic = [], 0
    for i in range(n_turns):
        if rng.random() < 0.1:
            topic = int(rng.integers(8))
        v = (centres[topic] + 0.8 * rng.standard_normal(dims)).astype(np.float32)
        v /= np.linalg.norm(v)
        role = "user" if i % 2 == 0 else "assistant"
        kind = "user-question" if role == "user" else "assistant-answer"
        turns.append(SegTurn(i, f"t{i}", role, kind, "text", t0 + timedelta(seconds=30 * i), v))
    return turns


def _torch_threads() -> int | None:
    try:
        import torch
    except ImportError:  # the benchmark does not need torch; report it when present
        return None
    return int(torch.get_num_threads())


def bench_segment(
    dims: int = 384, caps: tuple[int, ...] = (50, 150), n_turns: int = 5000, seed: int = 0
) -> dict[str, Any]:
    turns = _turns(dims, n_turns, seed)
    results = []
    paths = [("default", cap) for cap in caps] + [("semantic_rule", cap) for cap in caps]
    for path, cap in paths:
        config = replace(DetectorConfig(), max_run_length=cap)
        if path == "semantic_rule":  # every soft signal voting, so the timed path is full
            config = replace(config, combiner=False, w_change_point=0.5, w_surprisal=0.5)
        det = Detector(config)
        for t in turns[:200]:  # warm up caches and the projection
            det.update(t)
        det = Detector(config)
        times = np.empty(n_turns)
        n_cuts = 0
        for i, t in enumerate(turns):
            a = time.perf_counter_ns()
            n_cuts += len(det.update(t))
            times[i] = time.perf_counter_ns() - a
        us = times / 1000.0
        median = float(np.median(us))
        results.append(
            {
                "path": path,
                "combiner": det._feat is not None,
                "dims": dims,
                "max_run_length": cap,
                "n_turns": n_turns,
                "median_us": median,
                "p95_us": float(np.percentile(us, 95)),
                "mean_us": float(us.mean()),
                "n_episodes": n_cuts,
                "target_us": TARGET_US,
                "meets_target": median <= TARGET_US,
                "state_bytes": len(det.to_state()),
            }
        )
    load = os.getloadavg()
    return {
        "target_us": TARGET_US,
        "load_average": [round(x, 2) for x in load],
        "note": "median per-turn update, embedding excluded; other jobs on the machine "
        "inflate it (see load_average)",
        "cpu_count": os.cpu_count(),
        "torch_threads": _torch_threads(),
        "results": results,
    }
