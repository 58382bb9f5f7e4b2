"""The one-method seam to language models.

A provider answers `structured(messages, response_model, context=...)` with a
validated instance of `response_model`. The offline provider needs no network:
it asks the response model itself (`offline_answer(context)`), so each prompt's
deterministic fallback lives beside its schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)
Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": str}


# The stage a question belongs to, named by its response model; the stages of
# the run's accounting (`Usage.by_stage`, `episodic consolidate --json`).
STAGES = ("digest", "extraction", "merge", "reflection", "segmentation_judge", "other")
STAGE_OF_MODEL = {
    "EpisodeDigest": "digest",
    "BatchDigest": "digest",
    "SalienceRating": "digest",
    "ExtractedFacts": "extraction",
    "MergeDecisions": "merge",
    "FocalQuestions": "reflection",
    "Insights": "reflection",
    "PredictionError": "segmentation_judge",
}
_STAGE: ContextVar[str | None] = ContextVar("episodic_llm_stage", default=None)
# the user whose step is asking (set per thread of work by `cache.owned_by`):
# their cached answers and their share of the run's usage are kept apart
OWNER: ContextVar[str | None] = ContextVar("episodic_llm_owner", default=None)


def stage_of(response_model: type[BaseModel] | str) -> str:
    name = response_model if isinstance(response_model, str) else response_model.__name__
    return STAGE_OF_MODEL.get(name, "other")


@contextmanager
def asking(response_model: type[BaseModel]) -> Iterator[None]:
    """Within the block, calls, tokens, hits and waits count for the model's stage
    (the outermost block wins: a cache wrapper and its provider count once)."""
    if _STAGE.get() is not None:
        yield
        return
    token = _STAGE.set(stage_of(response_model))
    try:
        yield
    finally:
        _STAGE.reset(token)


def current_stage() -> str:
    return _STAGE.get() or "other"


def _stage_row() -> dict[str, float]:
    return {
        "calls": 0, "cache_hits": 0, "input_tokens": 0, "output_tokens": 0,
        "fallbacks": 0, "failures": 0, "wait_s": 0.0,
    }  # fmt: skip


TOTALS = ("calls", "cached", "input_tokens", "output_tokens", "failures", "fallbacks")


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
    fallbacks: int = 0  # answers that came from the offline fallback
    by_stage: dict[str, dict[str, float]] = field(default_factory=dict)
    by_user: dict[str, dict[str, float]] = field(default_factory=dict)  # the same rows per user
    untrusted: dict[str, int] = field(default_factory=dict)  # "stage:check" -> items

    def stage(self, name: str | None = None) -> dict[str, float]:
        return self.by_stage.setdefault(name or current_stage(), _stage_row())

    def rows(self, stage: str | None = None) -> list[dict[str, float]]:
        """The rows an event counts in: its stage's, and its user's when a
        step for one user is asking."""
        owner = OWNER.get()
        row = self.stage(stage)
        return [row] if owner is None else [row, self.by_user.setdefault(owner, _stage_row())]

    def add(self, model: str, input_tokens: int, output_tokens: int) -> None:
        self.calls += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.by_model[model] = self.by_model.get(model, 0) + 1
        for row in self.rows():
            row["calls"] += 1
            row["input_tokens"] += input_tokens
            row["output_tokens"] += output_tokens

    def stages_dict(self) -> dict[str, dict[str, float]]:
        return {k: dict(v) for k, v in sorted(self.by_stage.items())}

    def users_dict(self) -> dict[str, dict[str, float]]:
        return {k: dict(v) for k, v in sorted(self.by_user.items())}

    def as_dict(self) -> dict[str, Any]:
        """The run totals a flow diffs (the per-stage and per-user rows apart)."""
        return {k: getattr(self, k) for k in TOTALS}


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
        with asking(response_model):
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
