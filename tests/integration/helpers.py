"""Helpers for integration tests: a memory service on a temporary LanceDB
directory with the deterministic hash embedder and the offline provider."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from episodic.adapters.embedded import Memory
from episodic.config import Settings
from episodic.models import TurnIn
from tests.integration.reliability_support import turn_row
from tests.integration.reliability_support import write_jsonl as write_jsonl  # one writer

# the memories make_memory built; tests/conftest.py closes them after each test
MEMORIES = ExitStack()


@contextmanager
def held_elsewhere(hold: Callable[[], AbstractContextManager[Any]]) -> Iterator[None]:
    """`hold()` entered by another thread (a run of another worker) for the
    body of the with; released and joined after it."""
    held, done = threading.Event(), threading.Event()

    def holder() -> None:
        with hold():
            held.set()
            done.wait(60)

    t = threading.Thread(target=holder)
    t.start()
    try:
        assert held.wait(60), "the holder never got it"
        yield
    finally:
        done.set()
        t.join(60)


def moving_turns(secret: str, n: int = 4) -> list[dict[str, Any]]:
    """`n` days of a user who moved to `secret`ville and has a dog named after
    it, each day a user turn and the assistant's reply (with client ids)."""
    out: list[dict[str, Any]] = []
    for day in range(n):
        ts = f"2025-03-{day + 1:02d}T09:00:00Z"
        out += [
            {"role": "user", "text": f"I moved to {secret}ville last week, my dog is {secret}dog.",
             "ts": ts, "id": f"{secret}-u{day}"},
            {"role": "assistant", "text": f"Noted: you live in {secret}ville now.",
             "ts": ts.replace(":00:00", ":00:05"), "id": f"{secret}-a{day}"},
        ]  # fmt: skip
    return out


def settings_at(home: Path, **overrides: Any) -> Settings:
    """Settings on `home` with the hash embedder and the offline provider;
    `overrides` are Settings fields (idle_minutes=0.1, batch_turns=5 ...)."""
    return Settings(home=home, embedder="hash", llm="offline", **overrides)


def make_memory(home: Path, **overrides: Any) -> Memory:
    """The Python face's Memory on `home` (closed when the test ends); pass it
    to a flow (`consolidate(memory=m)`) or call its verbs. The environment is
    left alone."""
    return MEMORIES.enter_context(Memory(settings_at(home, **overrides)))


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
            out.append(turn_row(user, stream, role, text, t))
            t += timedelta(minutes=gap_minutes)
    return out


TURN_T0 = datetime(2025, 5, 1, 8, 0, tzinfo=UTC)


def turn_ins(
    a: int,
    b: int,
    stream: str = "s1",
    user: str = "u1",
    *,
    text: str = "turn {i} of {stream}",
    block: int = 0,
) -> list[TurnIn]:
    """Turns a to b-1 of one stream, user and assistant alternating a minute
    apart from TURN_T0; with `block`, an hour more before each block of that
    many turns (a gap the detector cuts at). `text` is formatted with i and stream."""
    return [
        TurnIn(
            user_id=user,
            stream_id=stream,
            role="user" if i % 2 == 0 else "assistant",
            kind="other",
            text=text.format(i=i, stream=stream),
            event_ts=TURN_T0 + timedelta(minutes=i + (60 * (i // block) if block else 0)),
            source="test",
            position=f"{stream}:{i}",
        )
        for i in range(a, b)
    ]
