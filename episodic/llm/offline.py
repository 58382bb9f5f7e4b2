"""The offline provider: deterministic, no network, asks the response model itself.

Each response model that may be asked offline carries a classmethod
`offline_answer(context)` (see `OfflineAnswerable`), so a prompt's
deterministic fallback lives beside its schema. The answer (an instance, or
a dict) is validated again with the context, so validators that read
`info.context` run here as they do on a model's answer. Usage records one call per
answer with 0 tokens: nothing is billed and no text is generated, so an
estimate would only blur the token totals of the network providers.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from episodic.errors import LLMError, LLMSchemaError
from episodic.llm.accounting import record_call
from episodic.llm.base import BaseProvider, Message, Usage
from episodic.llm.validate import coerce

T = TypeVar("T", bound=BaseModel)


class OfflineProvider(BaseProvider):
    name = "offline"

    def __init__(self, model: str = "offline-v1") -> None:
        if not model:
            raise ValueError("model must be a non-empty string")
        self.model = model
        self.usage = Usage()

    def __repr__(self) -> str:
        return f"OfflineProvider(model={self.model!r})"

    def _answer(
        self, messages: list[Message], response_model: type[T], context: dict[str, Any]
    ) -> T:
        del messages  # the offline answer depends on the context alone
        answer = getattr(response_model, "offline_answer", None)
        if not callable(answer):
            raise LLMError(
                self.name,
                self.model,
                f"{response_model.__name__} has no classmethod offline_answer(context); "
                "it cannot be answered offline",
            )
        try:
            value = coerce(answer(context), response_model, context)
        except (ValidationError, TypeError) as exc:
            raise LLMSchemaError(
                self.name,
                self.model,
                f"{response_model.__name__}.offline_answer gave an invalid answer: {exc}",
            ) from exc
        record_call(self.usage, self.model, 0, 0)
        return value
