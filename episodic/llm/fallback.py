"""Never leave an item unanswered: fall back to the offline answer, and say so.

`structured_or_offline` asks the provider; when it fails after its own
retries (any `LLMError`) the response model's offline answer is used and the
error is kept beside it, so a caller can store e.g.
`salience_source = "offline-fallback"` with the reason. Exceptions that are
not provider faults (a bug, a response model without `offline_answer`) still
raise: hiding them would hide the bug.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from episodic.errors import LLMError
from episodic.llm.accounting import record_fallback, record_wait
from episodic.llm.base import LLMProvider, Message, Usage, stage_of
from episodic.llm.offline import OfflineProvider

T = TypeVar("T", bound=BaseModel)
OFFLINE = "offline"
OFFLINE_FALLBACK = "offline-fallback"


@dataclass(frozen=True)
class Answer(Generic[T]):
    value: T
    source: str  # the provider's model name, "offline" or "offline-fallback"
    error: str | None = None

    @property
    def fell_back(self) -> bool:
        return self.source == OFFLINE_FALLBACK


def structured_or_offline(
    provider: LLMProvider,
    messages: list[Message],
    response_model: type[T],
    context: dict[str, Any] | None = None,
) -> Answer[T]:
    t0 = time.perf_counter()
    usage = getattr(provider, "usage", None)
    stage = stage_of(response_model)
    try:
        answer = _ask(provider, messages, response_model, context)
    finally:
        if isinstance(usage, Usage):  # the run's "llm_wait" stage
            record_wait(usage, time.perf_counter() - t0, stage)
    if answer.fell_back and isinstance(usage, Usage):
        record_fallback(usage, stage)
    return answer


def _ask(
    provider: LLMProvider,
    messages: list[Message],
    response_model: type[T],
    context: dict[str, Any] | None,
) -> Answer[T]:
    if provider.name == OFFLINE:
        value = provider.structured(messages, response_model, context=context)
        return Answer(value, OFFLINE)
    try:
        value = provider.structured(messages, response_model, context=context)
    except LLMError as exc:
        fallback = OfflineProvider().structured(messages, response_model, context=context)
        return Answer(fallback, OFFLINE_FALLBACK, str(exc))
    return Answer(value, provider.model)
