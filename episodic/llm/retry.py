"""Retries around one SDK call, through tenacity: only what is transient is retried.

The SDKs' built-in retries are switched off (`max_retries=0`) so that this is
the one place that decides. A call ends in one of three ways:

- a value;
- `LLMSchemaError` when the answer never fit the response model (instructor has
  already re-asked up to its limit, so retrying the whole call would only pay
  for the same mistake again);
- `LLMTransientError` after `retries` more attempts for timeouts, dropped
  connections, 429 and 5xx; or `LLMError` at once for anything else (400, 401).

Backoff is exponential with jitter drawn from a seeded RNG, so a test run is
reproducible; a `retry-after` header wins over the backoff, capped.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from episodic.errors import LLMError, LLMSchemaError, LLMTransientError

R = TypeVar("R")
FailureKind = Literal["transient", "schema", "fatal"]


@dataclass(frozen=True)
class Failure:
    """What a raised exception means for the retry loop."""

    kind: FailureKind
    reason: str
    retry_after_s: float | None = None


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 3  # transient retries after the first attempt
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    retry_after_cap_s: float = 30.0
    jitter: float = 0.25  # the delay is scaled by 1 +- jitter
    seed: int = 0

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError(f"retries must be >= 0, got {self.retries}")
        for name in ("base_delay_s", "max_delay_s", "retry_after_cap_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be in [0, 1], got {self.jitter}")

    def delay(self, attempt: int, retry_after_s: float | None, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number `attempt` (0-based)."""
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), self.retry_after_cap_s)
        backoff: float = min(self.max_delay_s, self.base_delay_s * 2.0**attempt)
        return backoff * (1 + self.jitter * (2 * rng.random() - 1))


def parse_retry_after(headers: object) -> float | None:
    """Seconds from `retry-after-ms`, or `retry-after` as seconds or an HTTP date."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    ms = get("retry-after-ms")
    if ms is not None:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class Retrier:
    """Runs calls under one policy; holds the seeded jitter RNG (thread-safe)."""

    def __init__(
        self,
        policy: RetryPolicy,
        *,
        sleep: Callable[[float], None],
    ) -> None:
        self.policy = policy
        self.sleep = sleep
        self._rng = random.Random(policy.seed)
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _delay(self, attempt: int, retry_after_s: float | None) -> float:
        with self._lock:
            return self.policy.delay(attempt, retry_after_s, self._rng)

    def run(
        self,
        call: Callable[[], R],
        classify: Callable[[Exception], Failure],
        *,
        provider: str,
        model: str,
    ) -> R:
        def attempt() -> R:
            try:
                return call()
            except Exception as exc:  # classified below; nothing passes unexamined
                failure = classify(exc)
            raise _Failed(failure)  # outside the except block: no SDK exception rides along

        def wait(state: RetryCallState) -> float:
            failure = _failure_of(state)
            return self._delay(state.attempt_number - 1, failure.retry_after_s)

        attempts = self.policy.retries + 1
        retrying = Retrying(
            stop=stop_after_attempt(attempts),
            wait=wait,
            retry=retry_if_exception(lambda e: isinstance(e, _Failed) and e.transient),
            sleep=self.sleep,
            reraise=True,
        )
        try:
            return retrying(attempt)
        except _Failed as failed:
            failure = failed.failure
        # Raised outside the except block, `from None`: SDK exceptions hold the
        # request, whose headers carry the API key, and must not travel on.
        if failure.kind == "schema":
            raise LLMSchemaError(provider, model, failure.reason) from None
        if failure.kind == "fatal":
            raise LLMError(provider, model, failure.reason) from None
        reason = f"{failure.reason} (gave up after {attempts} attempts)"
        raise LLMTransientError(provider, model, reason) from None


class _Failed(Exception):
    """A classified failure, carried through tenacity in place of the SDK's."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.reason)
        self.failure = failure
        self.transient = failure.kind == "transient"


def _failure_of(state: RetryCallState) -> Failure:
    exc = state.outcome.exception() if state.outcome is not None else None
    if not isinstance(exc, _Failed):
        raise TypeError(f"retry after {exc!r}, which is no classified failure")
    return exc.failure
