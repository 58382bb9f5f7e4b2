"""Micro-benchmark of the detector's per-turn update, embedding excluded.

Vectors are precomputed, clustered and unit-norm, so the figure is the
detector alone: every signal, the BOCPD step and the decision.
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

TARGET_US = 50


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
    for cap in caps:
        # every soft signal voting, so the timed path is the full one
        config = replace(DetectorConfig(), max_run_length=cap, w_change_point=0.5, w_surprisal=0.5)
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
                "dims": dims,
                "max_run_length": cap,
                "n_turns": n_turns,
                "median_us": median,
                "p95_us": float(np.percentile(us, 95)),
                "mean_us": float(us.mean()),
                "n_episodes": n_cuts,
                "meets_target": median <= TARGET_US,
                "state_bytes": len(det.to_state()),
            }
        )
    return {
        "target_us": TARGET_US,
        "cpu_count": os.cpu_count(),
        "torch_threads": _torch_threads(),
        "results": results,
    }
