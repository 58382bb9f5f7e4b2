"""The prediction-error judge through the provider seam."""

from __future__ import annotations

from episodic.errors import LLMTransientError
from episodic.llm.fake import FakeProvider
from episodic.segment.judge import PredictionError, make_judge, prediction_error_messages
from episodic.segment.types import JudgeRequest

REQ = JudgeRequest(
    summary="fixing the auth token refresh bug",
    recent_texts=["the login returns 401", "the clock skew is 3 minutes"],
    turn_text="Now let's deploy the service to staging",
    evidence=0.55,
)


def test_model_answer_is_used() -> None:
    seen: list[str] = []

    def handler(messages, model, context):  # type: ignore[no-untyped-def]
        seen.append(messages[-1]["content"])
        return {"decision": "new", "summary": "deploying to staging"}

    ans = make_judge(FakeProvider(handler))(REQ)
    assert ans.decision == "new" and ans.summary == "deploying to staging"
    assert "deploy the service to staging" in seen[0] and "auth token" in seen[0]


def test_failing_model_falls_back_to_the_evidence() -> None:
    def handler(messages, model, context):  # type: ignore[no-untyped-def]
        raise LLMTransientError("fake", "fake-v1", "timeout")

    judge = make_judge(FakeProvider(handler))
    assert judge(REQ).decision == "new"  # evidence 0.55 leans to split
    low = REQ.model_copy(update={"evidence": 0.3})
    assert judge(low).decision == "continue"


def test_prompt_is_stable_for_the_cache() -> None:
    assert prediction_error_messages(REQ) == prediction_error_messages(REQ)
    assert PredictionError.offline_answer({"evidence": 0.9}).decision == "new"
