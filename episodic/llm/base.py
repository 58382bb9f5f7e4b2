"""The one-method seam to language models.

A provider answers `structured(messages, response_model, context=...)` with a
validated instance of `response_model`. The offline provider needs no network:
it asks the response model itself (`offline_answer(context)`), so each prompt's
deterministic fallback lives beside its schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)
Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": str}


@dataclass
class Usage:
    """Calls and tokens, summed over a provider's life (or one flow run)."""

    calls: int = 0
    cached: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    failures: int = 0
    by_model: dict[str, int] = field(default_factory=dict)
    wait_s: float = 0.0  # seconds inside `structured`, cache hits and the offline provider included

    def add(self, model: str, input_tokens: int, output_tokens: int) -> None:
        self.calls += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.by_model[model] = self.by_model.get(model, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "cached": self.cached,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "failures": self.failures,
        }


@runtime_checkable
class LLMProvider(Protocol):
    name: str  # "offline", "anthropic", "openai"
    model: str
    usage: Usage

    def structured(
        self,
        messages: list[Message],
        response_model: type[T],
        *,
        context: dict[str, Any] | None = None,
    ) -> T: ...


class BaseProvider(LLMProvider):
    """What the concrete providers share: `structured` copies the context once
    (a dict, never None) and hands the question to `_answer`, the one method a
    provider writes, as an httpx transport writes `handle_request`."""

    def structured(
        self,
        messages: list[Message],
        response_model: type[T],
        *,
        context: dict[str, Any] | None = None,
    ) -> T:
        return self._answer(messages, response_model, dict(context or {}))

    def _answer(
        self, messages: list[Message], response_model: type[T], context: dict[str, Any]
    ) -> T:
        raise NotImplementedError


@runtime_checkable
class OfflineAnswerable(Protocol):
    """A response model that knows its own deterministic answer."""

    @classmethod
    def offline_answer(cls, context: dict[str, Any]) -> BaseModel: ...
