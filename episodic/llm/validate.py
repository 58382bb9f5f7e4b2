"""Turn whatever a provider produced (model, dict or JSON text) into a checked instance."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)


def coerce(value: object, response_model: type[T], context: dict[str, Any] | None) -> T:
    """Validate `value` against `response_model`, with `context` for its validators.

    An instance is re-validated from its dump: a model built elsewhere (or with
    `model_construct`) must pass the same checks as a parsed answer.
    Raises `pydantic.ValidationError` or `TypeError`.
    """
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if isinstance(value, str | bytes):
        return response_model.model_validate_json(value, context=context)
    if isinstance(value, dict):
        return response_model.model_validate(value, context=context)
    raise TypeError(f"cannot read a {response_model.__name__} from {type(value).__name__}")
