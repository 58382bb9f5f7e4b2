"""Offline and fake providers, the fallback and the disk cache: no network at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from episodic.errors import LLMError, LLMSchemaError, LLMTransientError
from episodic.llm import (
    CachedProvider,
    FakeProvider,
    LLMProvider,
    OfflineProvider,
    structured_or_offline,
)
from episodic.llm.base import Message
from episodic.llm.cache import cache_key
from episodic.llm.network import protect
from tests.stubs.rating import Cited, Rating

ASK: list[Message] = [{"role": "user", "content": "rate it"}]


class NoOffline(BaseModel):
    x: int


class BadOffline(BaseModel):
    x: int

    @classmethod
    def offline_answer(cls, context: dict[str, Any]) -> dict[str, Any]:
        return {"x": "not a number"}


def test_offline_is_deterministic_and_counts_a_free_call() -> None:
    provider = OfflineProvider()
    assert isinstance(provider, LLMProvider)
    a = provider.structured(ASK, Rating, context={"n_turns": 9})
    b = provider.structured([{"role": "user", "content": "other"}], Rating, context={"n_turns": 9})
    assert a == b == Rating(score=9, rationale="offline: episode length")
    assert provider.usage.as_dict() == {
        "calls": 2,
        "cached": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "failures": 0,
        "fallbacks": 0,
    }
    # counted for the stage the response model names ("other" for a test's model)
    assert provider.usage.by_stage["other"]["calls"] == 2


def test_offline_answer_is_validated_with_the_context() -> None:
    assert OfflineProvider().structured(ASK, Cited, context={"turns": [4, 5]}).turn == 4
    with pytest.raises(LLMSchemaError, match="offline_answer gave an invalid answer"):
        OfflineProvider().structured(ASK, BadOffline)


def test_offline_without_offline_answer_is_a_clear_error() -> None:
    with pytest.raises(LLMError, match="NoOffline has no classmethod offline_answer"):
        OfflineProvider().structured(ASK, NoOffline)


def test_fake_takes_models_dicts_and_json() -> None:
    answers: list[object] = [
        Rating(score=3, rationale="m"),
        {"score": 4, "rationale": "d"},
        '{"score": 5, "rationale": "j"}',
    ]
    provider = FakeProvider(lambda messages, model, ctx: answers.pop(0))  # type: ignore[arg-type,return-value]
    assert [provider.structured(ASK, Rating).score for _ in range(3)] == [3, 4, 5]
    assert provider.usage.calls == 3 and provider.usage.input_tokens > 0


def test_fake_reasks_with_the_validation_error() -> None:
    replies = iter([{"score": 11, "rationale": "x"}, {"score": 10, "rationale": "y"}])
    provider = FakeProvider(lambda messages, model, ctx: next(replies))
    assert provider.structured(ASK, Rating).score == 10
    assert len(provider.calls) == 2 and provider.usage.calls == 2
    assert "failed validation" in provider.calls[1][-1]["content"]
    assert "11" in provider.calls[1][-2]["content"]


def test_fake_gives_up_with_a_schema_error() -> None:
    provider = FakeProvider(lambda m, r, c: {"score": 0, "rationale": ""}, retries=1)
    with pytest.raises(LLMSchemaError, match="after 2 attempts"):
        provider.structured(ASK, Rating)


def test_fallback_records_the_error_and_uses_the_offline_answer() -> None:
    def down(
        messages: list[Message], model: type[BaseModel], ctx: dict[str, Any]
    ) -> dict[str, Any]:
        raise LLMTransientError("fake", "fake-v1", "HTTP 503 (gave up after 4 attempts)")

    answer = structured_or_offline(FakeProvider(down), ASK, Rating, {"n_turns": 1})
    assert answer.fell_back and answer.source == "offline-fallback"
    assert answer.value.score == 1
    assert answer.error == "fake/fake-v1: HTTP 503 (gave up after 4 attempts)"


def test_fallback_sources() -> None:
    fake = FakeProvider(lambda m, r, c: {"score": 2, "rationale": "x"}, model="m-1")
    assert structured_or_offline(fake, ASK, Rating).source == "m-1"
    offline = structured_or_offline(OfflineProvider(), ASK, Rating, {"n_turns": 3})
    assert (offline.source, offline.error, offline.value.score) == ("offline", None, 3)


def test_fallback_does_not_hide_bugs() -> None:
    def bug(m: list[Message], r: type[BaseModel], c: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("a bug, not a provider fault")

    with pytest.raises(KeyError):
        structured_or_offline(FakeProvider(bug), ASK, Rating)


def test_cache_hits_cost_nothing_and_survive_a_new_process(tmp_path: Path) -> None:
    fake = FakeProvider(lambda m, r, c: {"score": 6, "rationale": "x"})
    cached = CachedProvider(fake, tmp_path)
    assert cached.structured(ASK, Rating).score == 6
    assert cached.structured(ASK, Rating).score == 6
    assert (fake.usage.calls, fake.usage.cached) == (1, 1)
    assert cached.usage is fake.usage
    assert len(cached.cache) == 1

    again = CachedProvider(FakeProvider(lambda m, r, c: {"score": 1, "rationale": "new"}), tmp_path)
    assert again.structured(ASK, Rating).score == 6  # from disk
    assert again.usage.calls == 0


def test_cache_key_covers_provider_model_messages_schema_and_context() -> None:
    base = cache_key("anthropic", "m", ASK, Rating, {"a": 1})
    assert base == cache_key("anthropic", "m", list(ASK), Rating, {"a": 1})
    assert base != cache_key("openai", "m", ASK, Rating, {"a": 1})
    assert base != cache_key("anthropic", "m2", ASK, Rating, {"a": 1})
    assert base != cache_key("anthropic", "m", [{"role": "user", "content": "x"}], Rating, {"a": 1})
    assert base != cache_key("anthropic", "m", ASK, Cited, {"a": 1})
    assert base != cache_key("anthropic", "m", ASK, Rating, {"a": 2})
    assert base != cache_key("anthropic", "m", ASK, Rating, None)


def test_corrupt_or_stale_cache_entries_are_misses(tmp_path: Path) -> None:
    fake = FakeProvider(lambda m, r, c: {"score": 6, "rationale": "x"})
    cached = CachedProvider(fake, tmp_path)
    cached.structured(ASK, Rating)
    (entry,) = tmp_path.glob("*/*.json")
    entry.write_text("{half a file")
    assert cached.structured(ASK, Rating).score == 6 and fake.usage.calls == 2
    entry.write_text(json.dumps({"value": {"score": 99, "rationale": "x"}}))
    assert cached.structured(ASK, Rating).score == 6 and fake.usage.calls == 3
    assert json.loads(entry.read_text())["value"]["score"] == 6  # rewritten


@pytest.mark.parametrize(
    "text",
    [
        "plain",
        "{{ x }}",
        "{% if a %}b{% endif %}",
        "{# c #}",
        "{%- endraw -%} {% endraw %}",
        "{%",
        "}}{{",
    ],
)
def test_protect_renders_back_to_the_text(text: str) -> None:
    from jinja2.sandbox import SandboxedEnvironment

    assert SandboxedEnvironment().from_string(protect(text)).render(x=1) == text
