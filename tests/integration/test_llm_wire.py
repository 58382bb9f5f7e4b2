"""What each provider puts on the wire, read from the stub's recorded requests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from episodic.llm.anthropic_provider import AnthropicProvider
from episodic.llm.openai_provider import OpenAIMode, OpenAIProvider
from tests.stubs.anthropic_stub import AnthropicStub
from tests.stubs.openai_stub import OpenAIStub
from tests.stubs.rating import Rating, good
from tests.stubs.scripted import Answer

ASK = [
    {"role": "system", "content": "You rate episodes."},
    {"role": "user", "content": "Rate this."},
]


@pytest.fixture
def anthropic_stub() -> Iterator[AnthropicStub]:
    with AnthropicStub() as stub:
        yield stub


@pytest.fixture
def openai_stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as stub:
        yield stub


def test_anthropic_request_shape(anthropic_stub: AnthropicStub) -> None:
    anthropic_stub.push(Answer(good(5)))
    provider = AnthropicProvider(
        "claude-x", api_key="k", base_url=anthropic_stub.url, max_tokens=300, timeout_s=2
    )
    provider.structured(ASK, Rating)
    body = anthropic_stub.requests[0]
    assert body["model"] == "claude-x" and body["max_tokens"] == 300
    # anthropic 2.14's Messages.create takes no temperature: it travels in extra_body
    assert body["temperature"] == 0
    assert body["system"] == "You rate episodes."
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["tool_choice"]["name"] == "Rating"
    schema = body["tools"][0]["input_schema"]
    assert schema["properties"]["score"]["enum"] == list(range(1, 11))


def test_anthropic_system_is_not_templated_with_a_context(anthropic_stub: AnthropicStub) -> None:
    anthropic_stub.push(Answer(good(5)))
    provider = AnthropicProvider("claude-x", api_key="k", base_url=anthropic_stub.url)
    ask = [{"role": "system", "content": "Use {{ braces }}."}, ASK[1]]
    provider.structured(ask, Rating, context={"n_turns": 2})
    body = anthropic_stub.requests[0]
    assert body["system"] == "Use {{ braces }}."
    assert body["messages"][0]["content"] == "Rate this."


@pytest.mark.parametrize(
    ("mode", "has_tools", "format_type"),
    [("tools", True, None), ("json", False, "json_object"), ("json_schema", False, "json_schema")],
)
def test_openai_modes(
    openai_stub: OpenAIStub, mode: OpenAIMode, has_tools: bool, format_type: str | None
) -> None:
    openai_stub.push(Answer(good(3)))
    provider = OpenAIProvider(
        "qwen", base_url=openai_stub.url + "/v1", mode=mode, seed=11, timeout_s=2
    )
    assert provider.structured(ASK, Rating).score == 3
    body = openai_stub.requests[0]
    assert body["model"] == "qwen"
    assert body["temperature"] == 0 and body["seed"] == 11
    assert ("tools" in body) is has_tools
    assert (body.get("response_format") or {}).get("type") == format_type
    if has_tools:
        assert body["tool_choice"]["function"]["name"] == "Rating"
    # no key configured (Ollama): a placeholder is sent, never an empty header
    assert openai_stub.headers[0]["authorization"] == "Bearer not-needed"


def test_openai_seed_can_be_left_out(openai_stub: OpenAIStub) -> None:
    openai_stub.push(Answer(good(3)))
    OpenAIProvider("m", base_url=openai_stub.url + "/v1", seed=None).structured(ASK, Rating)
    assert "seed" not in openai_stub.requests[0]


def test_a_provider_pickles_without_its_client(openai_stub: OpenAIStub) -> None:
    import pickle

    openai_stub.push(Answer(good(3)), Answer(good(4)))
    provider = OpenAIProvider("m", base_url=openai_stub.url + "/v1")
    assert provider.structured(ASK, Rating).score == 3
    clone = pickle.loads(pickle.dumps(provider))
    assert clone._instructor is None  # rebuilt on the next call
    assert clone.structured(ASK, Rating).score == 4
    assert clone.usage.calls == 2  # the usage so far travels with it
