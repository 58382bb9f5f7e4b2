"""A provider that answers with a plain function: the test seam (like httpx's MockTransport).

    def handler(messages, response_model, context):
        return {"score": 7, "rationale": "a decision was made"}

    provider = FakeProvider(handler)

The handler may return a model instance, a dict or JSON text; it may raise an
`LLMError` to play a provider fault. An answer that does not validate is
re-asked up to `retries` times the way instructor does it: the bad answer and
the validation error are appended to the messages and the handler is called
again. Each handler call counts as one call in `usage`, with tokens estimated
at 4 characters per token (the fake has no tokenizer).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from episodic.errors import LLMSchemaError
from episodic.llm.accounting import record_call
from episodic.llm.base import BaseProvider, Message, Usage
from episodic.llm.validate import coerce

T = TypeVar("T", bound=BaseModel)
Handler = Callable[
    [list[Message], type[BaseModel], dict[str, Any]], BaseModel | dict[str, Any] | str
]


def _text(value: object) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str)


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


class FakeProvider(BaseProvider):
    def __init__(
        self,
        handler: Handler,
        *,
        name: str = "fake",
        model: str = "fake-v1",
        retries: int = 2,
    ) -> None:
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.handler = handler
        self.name = name
        self.model = model
        self.retries = retries
        self.usage = Usage()
        self.calls: list[list[Message]] = []  # the messages of every handler call

    def __repr__(self) -> str:
        return f"FakeProvider(name={self.name!r}, model={self.model!r})"

    def _answer(
        self, messages: list[Message], response_model: type[T], context: dict[str, Any]
    ) -> T:
        asked = list(messages)
        error: Exception | None = None
        for _ in range(self.retries + 1):
            self.calls.append(list(asked))
            raw = self.handler(list(asked), response_model, context)
            text = _text(raw)
            prompt = sum(_tokens(m.get("content", "")) for m in asked)
            record_call(self.usage, self.model, prompt, _tokens(text))
            try:
                return coerce(raw, response_model, context)
            except (ValidationError, TypeError) as exc:
                error = exc
                asked = [
                    *asked,
                    {"role": "assistant", "content": text},
                    {
                        "role": "user",
                        "content": f"Correct your answer; it failed validation:\n{exc}",
                    },
                ]
        raise LLMSchemaError(
            self.name,
            self.model,
            f"answer did not fit {response_model.__name__} after "
            f"{self.retries + 1} attempts: {error}",
        )
