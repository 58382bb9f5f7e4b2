"""Reflection prompts in the Generative Agents style (Park et al. 2023, A.1).

Statements are numbered from 1 in the prompt; the model cites them by number
("because of 1, 5, 3") and `episodic.reflection.map_evidence` maps the numbers
back to ids with a range check. Ids never appear in a prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from episodic.llm.base import Message
from episodic.prompts import one_line, system_and_user, today

MAX_STATEMENTS = 100
STATEMENT_CHARS = 300

_SYSTEM = (
    "You consolidate an AI agent's memory. You read numbered statements about "
    "its recent episodes and answer only with the requested fields. Do not "
    "invent facts that the statements do not support."
)


def number_statements(statements: Sequence[str]) -> str:
    """'1. ...' lines, each one line of at most 300 characters, at most 100 of them."""
    if len(statements) > MAX_STATEMENTS:
        raise ValueError(f"at most {MAX_STATEMENTS} statements per prompt, got {len(statements)}")
    return "\n".join(
        f"{i}. {one_line(s, STATEMENT_CHARS)}" for i, s in enumerate(statements, start=1)
    )


def _check(n: int, statements: Sequence[str], asked: str) -> None:
    if not 1 <= n <= 5:
        raise ValueError(f"n must be in 1..5, got {n}")
    if not statements:
        raise ValueError(f"{asked} need at least one statement")


def _asking(now: datetime, statements: str, question: str) -> list[Message]:
    """Both prompts' layout: the date, the numbered statements, then the question."""
    return system_and_user(_SYSTEM, f"{today(now)}\n\n{statements}\n\n{question}")


def focal_question_messages(
    statements: Sequence[str], now: datetime, *, n: int = 3
) -> list[Message]:
    """Ask for the n most salient high-level questions the statements can answer."""
    _check(n, statements, "focal questions")
    return _asking(
        now,
        number_statements(statements),
        f"Given only the information above, what are the {n} most salient "
        "high-level questions we can answer about the subjects in the statements?\n"
        f"Return `questions`: a list of {n} questions, each one sentence.",
    )


def insight_messages(
    question: str, statements: Sequence[str], now: datetime, *, n: int = 5
) -> list[Message]:
    """Ask for n high-level insights, each citing the numbers of its statements."""
    _check(n, statements, "insights")
    return _asking(
        now,
        f"Statements relevant to the question: {one_line(question, STATEMENT_CHARS)}\n"
        f"{number_statements(statements)}",
        f"What {n} high-level insights can you infer from the above statements? "
        "(example format: insight (because of 1, 5, 3))\n"
        "Return `insights`: a list where each item has `text`, the insight in one "
        "sentence, and `evidence`, the numbers of the statements above that "
        f"support it (each between 1 and {len(statements)}).",
    )
