"""One place that pairs a stub server with the provider that talks to it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from episodic.llm.anthropic_provider import AnthropicProvider
from episodic.llm.network import InstructorProvider
from episodic.llm.openai_provider import OpenAIMode, OpenAIProvider
from episodic.llm.retry import RetryPolicy
from tests.stubs.anthropic_stub import AnthropicStub
from tests.stubs.openai_stub import OpenAIStub
from tests.stubs.scripted import Action, ScriptedServer

SECRET = "sk-test-DO-NOT-LEAK-4f9a"
BACKENDS = ["anthropic", "openai-tools", "openai-json"]


@dataclass
class Sleeps:
    """A `sleep` that records the delays it was asked for and waits not at all."""

    delays: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def make_stub(backend: str, default: Callable[[int], Action] | None = None) -> ScriptedServer:
    return AnthropicStub(default) if backend == "anthropic" else OpenAIStub(default)


def make_backend_provider(
    backend: str,
    stub: ScriptedServer,
    *,
    timeout_s: float = 0.3,
    retries: int = 2,
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], None] | None = None,
) -> InstructorProvider:
    policy = policy or RetryPolicy(retries=retries, base_delay_s=0.001, max_delay_s=0.01)
    if backend == "anthropic":
        return AnthropicProvider(
            "claude-test",
            api_key=SECRET,
            base_url=stub.url,
            timeout_s=timeout_s,
            retries=retries,
            policy=policy,
            sleep=sleep,
        )
    mode: OpenAIMode = "json" if backend == "openai-json" else "tools"
    return OpenAIProvider(
        "llama-test",
        api_key=SECRET,
        base_url=stub.url + "/v1",
        mode=mode,
        timeout_s=timeout_s,
        retries=retries,
        policy=policy,
        sleep=sleep,
    )
