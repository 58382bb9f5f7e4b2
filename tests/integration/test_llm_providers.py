"""The real anthropic / openai SDKs and instructor against stub servers on 127.0.0.1.

Every case runs for Anthropic (tool_use), OpenAI-compatible TOOLS mode and
OpenAI-compatible JSON mode.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from episodic.errors import LLMError, LLMSchemaError, LLMTransientError
from episodic.llm import CachedProvider, RetryPolicy, structured_or_offline
from tests.stubs.backends import BACKENDS, SECRET, Sleeps, make_backend_provider, make_stub
from tests.stubs.rating import Cited, Rating, good
from tests.stubs.scripted import Answer, Delay, Garbage, ScriptedServer, Status, Text

ASK = [
    {"role": "system", "content": "Rate the episode from 1 (mundane) to 10 (critical)."},
    {"role": "user", "content": "The deploy failed and we rolled back."},
]
INVALID = Answer({"score": 11, "rationale": "off the scale"})


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def stub(backend: str) -> Iterator[ScriptedServer]:
    with make_stub(backend) as server:
        yield server


def assert_tokens_match(provider: object, stub: ScriptedServer) -> None:
    usage = provider.usage  # type: ignore[attr-defined]
    assert usage.calls == stub.served.answers
    assert usage.input_tokens == stub.served.input_tokens
    assert usage.output_tokens == stub.served.output_tokens


def test_valid_score(backend: str, stub: ScriptedServer) -> None:
    stub.push(Answer(good(8), input_tokens=31, output_tokens=9))
    provider = make_backend_provider(backend, stub)
    rating = provider.structured(ASK, Rating)
    assert rating == Rating(score=8, rationale="scored 8")
    assert len(stub.requests) == 1
    assert (provider.usage.calls, provider.usage.input_tokens, provider.usage.output_tokens) == (
        1,
        31,
        9,
    )
    assert stub.headers[0].get("x-stainless-retry-count") == "0"  # SDK retries are off


def test_invalid_then_valid_is_reasked(backend: str, stub: ScriptedServer) -> None:
    stub.push(INVALID, Answer(good(4)))
    provider = make_backend_provider(backend, stub)
    assert provider.structured(ASK, Rating).score == 4
    assert len(stub.requests) == 2
    assert provider.usage.calls == 2  # the re-ask is a call
    # instructor re-asks by appending the bad answer and the validation error
    assert len(stub.requests[1]["messages"]) > len(stub.requests[0]["messages"])
    assert "11" in str(stub.requests[1]["messages"])
    assert_tokens_match(provider, stub)


def test_429_honours_retry_after(backend: str, stub: ScriptedServer) -> None:
    stub.push(Status(429, {"retry-after": "0.05"}), Answer(good(6)))
    sleeps = Sleeps()
    provider = make_backend_provider(backend, stub, sleep=sleeps)
    assert provider.structured(ASK, Rating).score == 6
    assert sleeps.delays == [0.05]
    assert len(stub.requests) == 2
    assert_tokens_match(provider, stub)


def test_retry_after_is_capped(backend: str, stub: ScriptedServer) -> None:
    stub.push(Status(429, {"retry-after": "3600"}), Answer(good(6)))
    sleeps = Sleeps()
    policy = RetryPolicy(retries=2, base_delay_s=0.001, retry_after_cap_s=0.25)
    provider = make_backend_provider(backend, stub, policy=policy, sleep=sleeps)
    assert provider.structured(ASK, Rating).score == 6
    assert sleeps.delays == [0.25]


def test_500_then_valid(backend: str, stub: ScriptedServer) -> None:
    stub.push(Status(500), Answer(good(2)))
    sleeps = Sleeps()
    provider = make_backend_provider(backend, stub, sleep=sleeps)
    assert provider.structured(ASK, Rating).score == 2
    assert len(sleeps.delays) == 1 and 0 < sleeps.delays[0] <= 0.01
    assert_tokens_match(provider, stub)


def test_timeout_then_valid(backend: str, stub: ScriptedServer) -> None:
    stub.push(Delay(0.8, Answer(good(9))), Answer(good(3)))
    provider = make_backend_provider(backend, stub, timeout_s=0.2)
    assert provider.structured(ASK, Rating).score == 3  # not the late 9
    assert len(stub.requests) == 2
    assert provider.usage.calls == 1
    assert provider.usage.input_tokens == stub.served.input_tokens


def test_garbage_body_then_valid(backend: str, stub: ScriptedServer) -> None:
    stub.push(Garbage(), Answer(good(5)))
    provider = make_backend_provider(backend, stub)
    assert provider.structured(ASK, Rating).score == 5
    assert_tokens_match(provider, stub)


def test_malformed_json_answer_then_valid(backend: str, stub: ScriptedServer) -> None:
    stub.push(Text('{"score": 5, "rationale": '), Answer(good(5)))
    provider = make_backend_provider(backend, stub)
    assert provider.structured(ASK, Rating).score == 5
    assert provider.usage.calls == 2
    assert_tokens_match(provider, stub)


def test_raw_newline_inside_a_json_string(backend: str, stub: ScriptedServer) -> None:
    # what Gemma 270M sends through llama.cpp: strict JSON rejects it
    stub.push(Text('{"score": 6, "rationale": "two\nlines\tand a tab"}'), Answer(good(2)))
    provider = make_backend_provider(backend, stub)
    rating = provider.structured(ASK, Rating)
    if backend.startswith("openai"):  # mended before parsing: one call
        assert (rating.score, rating.rationale) == (6, "two\nlines\tand a tab")
        assert len(stub.requests) == 1
    else:  # anthropic's tool input arrives as parsed JSON; the text is re-asked
        assert rating.score == 2 and len(stub.requests) == 2
    assert_tokens_match(provider, stub)


def test_always_invalid_falls_back_with_the_error(backend: str, stub: ScriptedServer) -> None:
    stub.push(*[INVALID] * 10)
    provider = make_backend_provider(backend, stub, retries=2)
    with pytest.raises(LLMSchemaError) as info:
        provider.structured(ASK, Rating)
    assert info.value.provider == provider.name and info.value.model == provider.model
    assert len(stub.requests) == 3  # 1 + 2 re-asks; a schema error is not retried again

    answer = structured_or_offline(provider, ASK, Rating, {"n_turns": 6})
    assert answer.source == "offline-fallback"
    assert answer.value == Rating.offline_answer({"n_turns": 6})
    assert answer.error is not None and "schema" in answer.error and "11" in answer.error
    assert provider.usage.calls == 6 and provider.usage.failures == 2
    assert_tokens_match(provider, stub)


def test_always_5xx_ends_in_transient_error_then_fallback(
    backend: str, stub: ScriptedServer
) -> None:
    stub.push(*[Status(503)] * 3)
    provider = make_backend_provider(backend, stub, retries=2)
    answer = structured_or_offline(provider, ASK, Rating, {"n_turns": 2})
    assert answer.fell_back and answer.value.score == 2
    assert answer.error is not None and "503" in answer.error and "gave up after 3" in answer.error
    assert len(stub.requests) == 3
    stub.push(*[Status(503)] * 3)
    with pytest.raises(LLMTransientError):
        provider.structured(ASK, Rating)


@pytest.mark.parametrize("code", [400, 401])
def test_client_errors_are_not_retried_and_hide_the_key(
    backend: str, stub: ScriptedServer, code: int
) -> None:
    stub.push(Status(code, message=f"bad key {SECRET}"))
    provider = make_backend_provider(backend, stub)
    with pytest.raises(LLMError) as info:
        provider.structured(ASK, Rating)
    assert not isinstance(info.value, LLMTransientError | LLMSchemaError)
    assert len(stub.requests) == 1
    assert str(code) in str(info.value)
    assert SECRET not in str(info.value) and SECRET not in repr(info.value)
    assert info.value.__cause__ is None  # the SDK error holds the request headers
    assert SECRET not in repr(provider)
    # the key did reach the server, in a header
    assert any(SECRET in v for v in stub.headers[0].values())


def test_cache_hit_on_rerun_makes_no_request(
    backend: str, stub: ScriptedServer, tmp_path: Path
) -> None:
    stub.push(Answer(good(7)))
    first = CachedProvider(make_backend_provider(backend, stub), tmp_path / "cache")
    assert first.structured(ASK, Rating, context={"n_turns": 3}).score == 7
    assert len(stub.requests) == 1

    rerun = CachedProvider(make_backend_provider(backend, stub), tmp_path / "cache")
    assert rerun.structured(ASK, Rating, context={"n_turns": 3}).score == 7
    assert len(stub.requests) == 1
    assert (rerun.usage.calls, rerun.usage.cached) == (0, 1)

    # a different context is a different key: it is asked
    stub.push(Answer(good(1)))
    assert rerun.structured(ASK, Rating, context={"n_turns": 4}).score == 1
    assert len(stub.requests) == 2


def test_a_schema_failure_is_cached_a_transient_one_is_not(
    backend: str, stub: ScriptedServer, tmp_path: Path
) -> None:
    # an answer that never fits: the rerun falls back again without a request
    stub.push(*[INVALID] * 3)
    provider = CachedProvider(make_backend_provider(backend, stub), tmp_path)
    first = structured_or_offline(provider, ASK, Rating)
    assert first.fell_back and len(stub.requests) == 3
    rerun = CachedProvider(make_backend_provider(backend, stub), tmp_path)
    again = structured_or_offline(rerun, ASK, Rating)
    assert again.fell_back and again.value == first.value and "cached" in (again.error or "")
    assert len(stub.requests) == 3 and (rerun.usage.calls, rerun.usage.cached) == (0, 1)
    # timeouts and 5xx are asked again, and a later good answer is kept
    other = [{"role": "user", "content": "rate another"}]
    stub.push(*[Status(503)] * 3, Answer(good(5)))
    assert structured_or_offline(provider, other, Rating).fell_back
    assert provider.structured(other, Rating).score == 5
    assert len(stub.requests) == 7


def test_validation_context_reaches_validators_and_text_is_not_templated(
    backend: str, stub: ScriptedServer
) -> None:
    text = "config: {{ user.name }} {% if x %}y{% endif %} {#"
    stub.push(Answer({"turn": 99, "text": "bad"}), Answer({"turn": 12, "text": "ok"}))
    provider = make_backend_provider(backend, stub)
    cited = provider.structured(
        [{"role": "user", "content": text}], Cited, context={"turns": [11, 12]}
    )
    assert cited.turn == 12
    assert len(stub.requests) == 2  # 99 was rejected by the context-aware validator
    first = stub.requests[0]["messages"]
    assert any(text in str(m.get("content")) for m in first)
