"""Small response models for the LLM tests, each with its offline answer."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ValidationInfo, field_validator

Score = Literal[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]


class Rating(BaseModel):
    score: Score
    rationale: str

    @classmethod
    def offline_answer(cls, context: dict[str, Any]) -> Rating:
        n = int(context.get("n_turns", 4))
        score = max(1, min(10, n))
        return cls.model_validate({"score": score, "rationale": "offline: episode length"})


class Cited(BaseModel):
    """An answer that must cite a turn the context knows (validation context)."""

    turn: int
    text: str

    @field_validator("turn")
    @classmethod
    def _known_turn(cls, turn: int, info: ValidationInfo) -> int:
        known = (info.context or {}).get("turns", [])
        if turn not in known:
            raise ValueError(f"turn {turn} is not one of {known}")
        return turn

    @classmethod
    def offline_answer(cls, context: dict[str, Any]) -> Cited:
        # `cls(...)` would run the validator without the context
        return cls.model_validate({"turn": context["turns"][0], "text": "offline"}, context=context)


def good(score: int = 7) -> dict[str, Any]:
    return {"score": score, "rationale": f"scored {score}"}
