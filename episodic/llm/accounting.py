"""Thread-safe updates of a `Usage` shared by a provider and its cache wrapper.

Each update also counts for the stage of the question being asked
(`base.asking`, set by `BaseProvider.structured` from the response model):
digest, extraction, merge, reflection, segmentation_judge."""

from __future__ import annotations

import threading

from episodic.llm.base import Usage

_LOCK = threading.Lock()


def record_call(usage: Usage, model: str, input_tokens: int, output_tokens: int) -> None:
    with _LOCK:
        usage.add(model, input_tokens, output_tokens)


def record_cached(usage: Usage) -> None:
    with _LOCK:
        usage.cached += 1
        for row in usage.rows():
            row["cache_hits"] += 1


def record_failure(usage: Usage) -> None:
    with _LOCK:
        usage.failures += 1
        for row in usage.rows():
            row["failures"] += 1


def record_fallback(usage: Usage, stage: str | None = None) -> None:
    with _LOCK:
        usage.fallbacks += 1
        for row in usage.rows(stage):
            row["fallbacks"] += 1


def record_untrusted(usage: Usage, stage: str, check: str) -> None:
    """A model's answer for one item failed a check (`episodic.llm.trust`)."""
    key = f"{stage}:{check}"
    with _LOCK:
        usage.untrusted[key] = usage.untrusted.get(key, 0) + 1


def record_wait(usage: Usage, seconds: float, stage: str | None = None) -> None:
    with _LOCK:
        usage.wait_s += seconds
        for row in usage.rows(stage):
            row["wait_s"] += seconds


def stage_report(
    before: dict[str, dict[str, float]],
    after: dict[str, dict[str, float]],
    provider: str,
    model: str,
) -> dict[str, dict[str, float | int | None]]:
    """Per stage, what happened between two `Usage.stages_dict()` snapshots:
    calls, cache hits, tokens, fallbacks, failures, seconds waiting, and cost
    from the price table (None when the model has no published price)."""
    from episodic.llm.prices import estimated_cost_usd

    out: dict[str, dict[str, float | int | None]] = {}
    for name in sorted(set(after) | set(before)):
        a, b = after.get(name, {}), before.get(name, {})
        row: dict[str, float | int | None] = {
            k: (
                round(a.get(k, 0) - b.get(k, 0), 3)
                if k == "wait_s"
                else int(a.get(k, 0) - b.get(k, 0))
            )
            for k in (
                "calls",
                "cache_hits",
                "input_tokens",
                "output_tokens",
                "fallbacks",
                "failures",
                "wait_s",
            )
        }
        if not any(row.values()):
            continue
        row["cost_usd"] = estimated_cost_usd(
            provider, model, int(row["input_tokens"] or 0), int(row["output_tokens"] or 0)
        )
        out[name] = row
    return out
