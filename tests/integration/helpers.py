"""Helpers for integration tests: a runtime on a temporary LanceDB directory
with the deterministic hash embedder and the offline provider."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from episodic.config import Settings
from tasks.runtime import Runtime, get_runtime, reset_runtimes


def make_runtime(home: Path, **overrides: Any) -> Runtime:
    """A runtime on `home`, set through the environment so that flows, which
    build their runtime from the environment, use the same store."""
    reset_runtimes()
    env = {"EPISODIC_HOME": str(home), "EPISODIC_EMBEDDER": "hash", "EPISODIC_LLM": "offline"}
    env.update({f"EPISODIC_{k.upper()}": str(v) for k, v in overrides.items()})
    os.environ.update(env)
    return get_runtime(Settings())


def write_jsonl(path: Path, turns: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    return path


TOPICS = [
    ("the login endpoint returns 401 after the token refresh", "auth token refresh bug"),
    ("deploy the service to the staging cluster with helm", "helm staging deploy"),
    ("add retry logging with exponential backoff to the http client", "retry logging backoff"),
    ("my dog Rex needs a vet appointment next week", "dog vet appointment"),
]


def synthetic_stream(
    user: str = "u1",
    stream: str = "s1",
    n_per_topic: int = 6,
    start: datetime | None = None,
    gap_minutes: float = 2.0,
) -> list[dict[str, Any]]:
    """Turns over a few topics, user and assistant alternating."""
    t = start or datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
    out: list[dict[str, Any]] = []
    for topic, words in TOPICS:
        for i in range(n_per_topic):
            role = "user" if i % 2 == 0 else "assistant"
            text = f"{topic} — step {i}: {words} {words.split()[0]} details {i}"
            out.append(
                {
                    "user_id": user,
                    "stream_id": stream,
                    "role": role,
                    "text": text,
                    "ts": t.isoformat(),
                }
            )
            t += timedelta(minutes=gap_minutes)
    return out
