"""docs/performance.md is rendered from stored results (issue 19)."""

from __future__ import annotations

from typing import Any

from episodic.bench.perf_doc import render


def test_render_puts_each_target_beside_its_date_and_load() -> None:
    record: dict[str, Any] = {
        "benchmark": "memory",
        "measured_at": "2026-11-30 22:00 UTC",
        "command": "episodic bench memory --json",
        "result": {
            "runs": [
                {"turns": 50_000, "peak_rss_mb": 600.0},
                {"turns": 100_000, "peak_rss_mb": 640.0},
            ],
            "growth_first_to_last": 1.067,
            "machine": {"cpu_count": 2, "load_avg_1m": 1.5},
            "targets": {"growth_first_to_last": {"value": 1.067, "target": "<= 1.25", "met": True}},
        },
    }
    page = render({"memory": record})
    assert (
        "| memory | growth_first_to_last | 1.067 | <= 1.25 | yes "
        "| 2026-11-30 22:00 UTC | 2 CPUs, load 1.5 |" in page
    )
    assert "| 100000 | 640.0 |" in page  # the runs table
    missed = {
        **record,
        "result": {
            **record["result"],
            "targets": {"x": {"value": 3, "target": "<= 2", "met": False}},
        },
    }
    assert "| **no** |" in render({"memory": missed})
