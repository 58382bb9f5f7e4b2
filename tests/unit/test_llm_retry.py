"""The retry loop and its policy, without any network."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from episodic.errors import LLMError, LLMSchemaError, LLMTransientError
from episodic.llm.retry import Failure, Retrier, RetryPolicy, parse_retry_after


class Flaky:
    """Fails with the given failures in order, then returns 'ok'."""

    def __init__(self, *failures: Failure) -> None:
        self.failures = list(failures)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise RuntimeError(self.failures.pop(0).kind)
        return "ok"


def run(flaky: Flaky, failures: list[Failure], policy: RetryPolicy) -> tuple[str, list[float]]:
    delays: list[float] = []
    by_kind = iter(failures)
    retrier = Retrier(policy, sleep=delays.append)
    value = retrier.run(flaky, lambda exc: next(by_kind), provider="p", model="m")
    return value, delays


def test_transient_failures_are_retried_with_growing_backoff() -> None:
    fails = [Failure("transient", "HTTP 500")] * 3
    policy = RetryPolicy(retries=3, base_delay_s=0.1, max_delay_s=10, jitter=0.0)
    value, delays = run(Flaky(*fails), fails, policy)
    assert value == "ok"
    assert delays == pytest.approx([0.1, 0.2, 0.4])


def test_backoff_is_capped_and_jitter_is_bounded_and_seeded() -> None:
    policy = RetryPolicy(retries=8, base_delay_s=1.0, max_delay_s=4.0, jitter=0.25, seed=3)
    a = [policy.delay(i, None, rng) for rng in [random.Random(3)] for i in range(8)]
    b = [policy.delay(i, None, rng) for rng in [random.Random(3)] for i in range(8)]
    assert a == b  # same seed, same delays
    assert all(0.75 * min(4.0, 2**i) <= d <= 1.25 * min(4.0, 2**i) for i, d in enumerate(a))
    assert max(a) <= 5.0


def test_retry_after_wins_over_backoff_and_is_capped() -> None:
    policy = RetryPolicy(retries=2, base_delay_s=5.0, retry_after_cap_s=1.5)
    fails = [Failure("transient", "429", 0.3), Failure("transient", "429", 90.0)]
    _, delays = run(Flaky(*fails), fails, policy)
    assert delays == [0.3, 1.5]


def test_gives_up_with_the_last_reason() -> None:
    fails = [Failure("transient", f"HTTP 50{i}") for i in range(3)]
    flaky = Flaky(*fails, *fails)
    with pytest.raises(LLMTransientError) as info:
        run(flaky, fails, RetryPolicy(retries=2, base_delay_s=0))
    assert flaky.calls == 3
    assert info.value.provider == "p" and info.value.model == "m"
    assert "HTTP 502" in info.value.reason and "gave up after 3 attempts" in info.value.reason


@pytest.mark.parametrize(("kind", "error"), [("schema", LLMSchemaError), ("fatal", LLMError)])
def test_schema_and_fatal_are_not_retried(kind: str, error: type[LLMError]) -> None:
    fails = [Failure(kind, "nope")]  # type: ignore[arg-type]
    flaky = Flaky(*fails)
    with pytest.raises(error) as info:
        run(flaky, fails, RetryPolicy(retries=5))
    assert flaky.calls == 1
    assert not isinstance(info.value, LLMTransientError)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_bad_policy_is_refused() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(retries=-1)
    with pytest.raises(ValueError):
        RetryPolicy(jitter=2.0)
    with pytest.raises(ValueError):
        RetryPolicy(base_delay_s=-0.1)


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after(None) is None
    later = datetime.now(UTC) + timedelta(seconds=120)
    seconds = parse_retry_after({"retry-after": format_datetime(later, usegmt=True)})
    assert seconds is not None and 100 < seconds <= 120
    past = datetime.now(UTC) - timedelta(seconds=120)
    assert parse_retry_after({"retry-after": format_datetime(past, usegmt=True)}) == 0.0
