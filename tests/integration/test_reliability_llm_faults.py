"""LLM faults through the consolidate flow: a stub Anthropic server answers a
seeded random mix of valid answers, timeouts, 429, 5xx, malformed JSON,
schema-invalid answers and non-JSON bodies over 200 episodes. Every episode
ends scored (by the model or by the recorded offline fallback), no flow run
fails, and the provider's token accounting equals what the stub served.

The provider is configured the way an operator would: EPISODIC_LLM=anthropic,
EPISODIC_LLM_BASE_URL pointing at the stub, a short timeout, two retries and
a 10 ms first backoff (EPISODIC_LLM_RETRY_BASE_S) so the run stays short.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.integration.reliability_support import record, turn_row, use_home, write_jsonl
from tests.stubs.anthropic_stub import AnthropicStub, tool_name
from tests.stubs.scripted import Action, Answer, Delay, Garbage, Status, Text

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

MODEL = "claude-test"
TIMEOUT_S = 0.3
EPISODES = 200
RUNS = 4  # the episodes arrive over four polls, four flow runs
AUTO = {"__auto__": True}
INVALID = {"__invalid__": True}


def valid_answer(tool: str, rng: random.Random) -> dict[str, Any]:
    if tool == "EpisodeDigest":
        return {
            "rating": valid_answer("SalienceRating", rng),
            "facts": valid_answer("ExtractedFacts", rng)["facts"],
        }
    if tool == "SalienceRating":
        return {"score": rng.randint(1, 10), "rationale": "stub rating", "summary": "stub summary"}
    if tool == "ExtractedFacts":
        if rng.random() < 0.5:
            return {"facts": []}
        return {
            "facts": [{"text": f"User mentioned stub topic {rng.randint(0, 40)}", "support": [1]}]
        }
    if tool == "MergeDecisions":
        return {"decisions": [{"event": "ADD", "id": None, "text": "", "new_index": 1}]}
    if tool == "FocalQuestions":
        return {"questions": ["What did the user work on?"]}
    if tool == "Insights":
        return {"insights": []}
    return {}


def invalid_answer(tool: str) -> dict[str, Any]:
    """An answer that parses but breaks the response model."""
    answers: dict[str, dict[str, Any]] = {
        "EpisodeDigest": {"rating": {"score": 11, "rationale": "off the scale"}, "facts": []},
        "SalienceRating": {"score": 11, "rationale": "off the scale"},
        "ExtractedFacts": {"facts": [{"text": "x", "support": [999]}]},
        "MergeDecisions": {"decisions": [{"event": "UPDATE", "new_index": 1}]},
        "FocalQuestions": {"questions": []},
        "Insights": {"insights": [{"text": "ab", "evidence": []}]},
    }
    return answers.get(tool, {"unexpected": True})


class FaultyAnthropic(AnthropicStub):
    """Answers each request for the tool it asks for, or breaks it on purpose."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.answer_rng = random.Random(seed + 1)
        super().__init__(self._pick)

    def _pick(self, n: int) -> Action:
        r = self.rng.random()
        if r < 0.50:
            return Answer(
                AUTO, input_tokens=self.rng.randint(50, 500), output_tokens=self.rng.randint(5, 60)
            )
        if r < 0.60:
            return Status(429, {"retry-after-ms": "1"}, message="rate limited")
        if r < 0.70:
            return Status(self.rng.choice([500, 502, 503, 529]))
        if r < 0.77:
            return Delay(TIMEOUT_S + 0.3, Answer(AUTO))
        if r < 0.85:
            return Text('{"score": 5, "rationale": ', input_tokens=40, output_tokens=4)
        if r < 0.95:
            return Answer(INVALID, input_tokens=60, output_tokens=12)
        return Garbage()

    def render_answer(self, action: Answer | Text, request: dict[str, Any]) -> dict[str, Any]:
        if isinstance(action, Answer) and (action.value is AUTO or action.value is INVALID):
            tool = tool_name(request)
            with self._lock:
                value = (
                    valid_answer(tool, self.answer_rng)
                    if action.value is AUTO
                    else invalid_answer(tool)
                )
            action = Answer(value, action.input_tokens, action.output_tokens)
        return super().render_answer(action, request)


def fault_kind(action: Action) -> str:
    if isinstance(action, Answer):
        return "valid" if action.value is AUTO else "schema-invalid"
    if isinstance(action, Status):
        return "429" if action.code == 429 else "5xx"
    # the stub's other actions, each its own fault
    return {Delay: "timeout", Text: "malformed-json", Garbage: "non-json-body"}[type(action)]


def episodes_input(user: str, n: int, start: datetime) -> list[dict[str, Any]]:
    """n two-turn episodes, 45 minutes apart (each gap is a cut)."""
    out = []
    t = start
    for i in range(n):
        for role, text in (
            ("user", f"I need help with task {i}: the deploy of service {i % 7} failed"),
            ("assistant", f"Looking at task {i}: restart service {i % 7} and check the logs"),
        ):
            out.append(turn_row("fault-user", "s", role, text, t))
            t += timedelta(minutes=1)
        t += timedelta(minutes=45)
    return out


@pytest.fixture
def stub() -> Iterator[FaultyAnthropic]:
    with FaultyAnthropic(seed=20250301) as server:
        yield server


def test_fault_mix_over_200_episodes(
    stub: FaultyAnthropic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic.service.ingest import ingest_file
    from flows.consolidate import consolidate

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    memory = use_home(
        monkeypatch,
        tmp_path / "home",
        llm="anthropic",
        llm_base_url=stub.url,
        llm_model=MODEL,
        llm_timeout_s=TIMEOUT_S,
        llm_retries=2,
        llm_retry_base_s=0.01,
        llm_cache="false",
    )
    rt = memory.rt
    assert rt.provider.name == "anthropic" and rt.provider.model == MODEL
    # one more turn so the last episode's gap closes it; the final run flushes
    turns = episodes_input("fault-user", EPISODES + 1, datetime(2025, 3, 1, tzinfo=UTC))
    per_run = len(turns) // RUNS
    summaries: list[dict[str, Any]] = []
    for i in range(RUNS):
        upto = len(turns) if i == RUNS - 1 else (i + 1) * per_run
        write_jsonl(tmp_path / "in.jsonl", turns[:upto])  # the file grows
        ingest_file(rt.raw, tmp_path / "in.jsonl", "jsonl")
        flush = i == RUNS - 1
        state = consolidate(user="fault-user", flush=flush, return_state=True, memory=memory)
        assert state.is_completed(), state
        summary = state.result()
        assert isinstance(summary, dict)
        summaries.append(summary)

    eps = rt.episodes.list("fault-user")
    assert len(eps) >= EPISODES
    unscored = [e for e in eps if not (1 <= e.salience <= 10)]
    by_source = Counter(e.salience_source for e in eps)
    assert not unscored
    assert set(by_source) <= {MODEL, "offline-fallback"}, by_source
    fallbacks = [e for e in eps if e.salience_source == "offline-fallback"]
    assert all("[error:" in e.salience_rationale for e in fallbacks)
    assert all(e.facts_state == "done" for e in eps)

    kinds = Counter(fault_kind(a) for a in stub.actions)
    faults = sum(n for k, n in kinds.items() if k != "valid")
    # the digest takes episodes in batches (issue 28): 200 episodes are about
    # 50 requests, of which the mix makes about half faults
    assert faults >= 15 and len(kinds) == 7, kinds  # every kind of fault was served
    # both outcomes happened: the retries rescue most, some fall back
    assert by_source[MODEL] > 0 and by_source["offline-fallback"] > 0, by_source

    usage = rt.provider.usage
    served = stub.served
    assert (usage.calls, usage.input_tokens, usage.output_tokens) == (
        served.answers,
        served.input_tokens,
        served.output_tokens,
    )
    assert sum(s["llm_calls"] for s in summaries) == served.answers
    assert sum(s["tokens"]["input"] for s in summaries) == served.input_tokens
    assert sum(s["tokens"]["output"] for s in summaries) == served.output_tokens
    record(
        "llm_faults",
        episodes=len(eps),
        requests=len(stub.requests),
        faults_injected=faults,
        fault_kinds={k: n for k, n in kinds.items() if k != "valid"},
        scored_by_model=by_source[MODEL],
        scored_by_fallback=by_source["offline-fallback"],
        episodes_unscored=len(unscored),
        flow_runs=len(summaries),
        flow_runs_failed=0,
        tokens_served=served.input_tokens + served.output_tokens,
        tokens_counted=usage.input_tokens + usage.output_tokens,
    )
