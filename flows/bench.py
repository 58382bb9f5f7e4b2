"""Benchmarks: each prints its figures beside its target."""

from __future__ import annotations

from typing import Any


def run_bench(name: str) -> dict[str, Any]:
    if name == "segment":
        from episodic.segment_bench import bench_segment

        return bench_segment()
    raise SystemExit(f"unknown benchmark {name!r}")
