"""The prediction-error judge: asked by the detector only when the soft
evidence for a boundary is ambiguous and a model is configured. It sees the
one-line summary of the open episode and the next turn, and answers
continue | new | sub-episode with an updated summary."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from episodic.llm.base import LLMProvider, Message
from episodic.llm.fallback import structured_or_offline
from episodic.prompts import one_line
from episodic.segment.types import Judge, JudgeAnswer, JudgeRequest


class PredictionError(BaseModel):
    model_config = ConfigDict(frozen=True)

    decision: Literal["continue", "new", "sub-episode"] = Field(
        description="continue: the turn belongs to the episode; new: it starts a new one; "
        "sub-episode: a detour nested inside the episode"
    )
    summary: str = Field(default="", max_length=300, description="the episode so far, one line")

    @classmethod
    def offline_answer(cls, context: dict[str, Any]) -> PredictionError:
        # without a model, defer to the detector's own evidence: split when it leans to split
        evidence = float(context.get("evidence", 0.0))
        decision: Literal["continue", "new"] = "new" if evidence >= 0.5 else "continue"
        return cls(decision=decision, summary=str(context.get("summary", ""))[:300])


def prediction_error_messages(req: JudgeRequest) -> list[Message]:
    """No date in this prompt: the same turn must get the same (cached) answer
    on a rerun, so that replaying a stream cuts it the same way."""
    recent = "\n".join(f"- {one_line(t, 200)}" for t in req.recent_texts[-5:])
    user = (
        f"Summary of the current episode: {one_line(req.summary, 300) or '(none yet)'}\n"
        f"Its most recent turns:\n{recent or '- (none)'}\n\n"
        f"Next turn: {one_line(req.turn_text, 600)}\n\n"
        "Does the next turn continue this episode, start a new one, or open a sub-episode "
        "(a detour inside it)? Return `decision` and `summary`, the episode's updated "
        "one-line summary."
    )
    system = (
        "You segment an agent's conversation into episodes, one task each. "
        "When in doubt, prefer a new episode over burying two tasks in one."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def make_judge(provider: LLMProvider) -> Judge:
    """A judge backed by the provider; a failed call falls back to the offline rule."""

    def judge(req: JudgeRequest) -> JudgeAnswer:
        ans = structured_or_offline(
            provider,
            prediction_error_messages(req),
            PredictionError,
            context={"evidence": req.evidence, "summary": req.summary},
        )
        return JudgeAnswer(decision=ans.value.decision, summary=ans.value.summary)

    return judge
