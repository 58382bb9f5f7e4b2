"""Thread-safe updates of a `Usage` shared by a provider and its cache wrapper."""

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


def record_failure(usage: Usage) -> None:
    with _LOCK:
        usage.failures += 1


def record_wait(usage: Usage, seconds: float) -> None:
    with _LOCK:
        usage.wait_s += seconds
