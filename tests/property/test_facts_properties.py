"""Invariants of fact extraction and merge, over generated inputs."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from episodic.facts import (
    CandidateSet,
    ExistingFact,
    FactTurn,
    decide,
    normalize,
    offline_extract,
)
from episodic.llm.fake import FakeProvider
from episodic.llm.offline import OfflineProvider
from tests.unit.test_facts_support import NOW, T0, new_fact, vec

SUBJECTS = ["I", "We", "My dog", "Rex", "my team"]
STATEMENTS = [
    "I live in Paris",
    "I moved to Berlin",
    "I have a dog named Rex",
    "Rex died last week",
    "I work at Acme",
    "we use Postgres",
    "we switched to MySQL",
    "I like jazz",
    "I hate jazz",
    "I no longer drink coffee",
    "I sold my car",
    "I stopped smoking",
    "my favorite color is blue",
    "I'm planning to visit Japan",
    "we decided to use Rust",
    "What do I like?",
    "hello there",
]
FACT_TEXTS = [
    "User lives in Paris",
    "User moved to Berlin",
    "User has a dog named Rex",
    "Rex died last week",
    "User works at Acme",
    "Team uses Postgres",
    "Team switched to MySQL",
    "User likes jazz",
    "User hates jazz",
    "User no longer drinks coffee",
    "User plays chess",
    "user lives in paris.",
]

sentence = st.one_of(st.sampled_from(STATEMENTS), st.text(max_size=60))
turn_text = st.lists(sentence, min_size=1, max_size=4).map(". ".join)
role = st.sampled_from(["user", "assistant", "tool", "system"])
turns = st.lists(st.tuples(role, turn_text), max_size=6).map(
    lambda rows: [FactTurn(f"t{i}", r, t, T0) for i, (r, t) in enumerate(rows)]  # type: ignore[arg-type]
)


@given(st.text())
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once


@given(turns)
def test_offline_extraction_is_deterministic_and_reads_user_turns_only(
    rows: list[FactTurn],
) -> None:
    first = offline_extract(rows)
    assert offline_extract(list(rows)) == first
    for _, support in first:
        assert support and all(rows[i - 1].role == "user" for i in support)
    # assistant, tool and system turns alone never yield a fact
    silenced = [FactTurn(t.turn_id, "assistant", t.text, t.event_ts) for t in rows]
    assert offline_extract(silenced) == []


def existing(i: int, text: str) -> ExistingFact:
    return ExistingFact(f"f{i}", text, vec(text))


candidate_sets = st.lists(
    st.tuples(
        st.sampled_from(FACT_TEXTS),
        st.lists(st.sampled_from(list(enumerate(FACT_TEXTS))), max_size=4, unique=True),
    ),
    max_size=6,
).map(
    lambda rows: [
        CandidateSet(new_fact(t), vec(t), [existing(i, c) for i, c in cands]) for t, cands in rows
    ]
)

merge_item = st.fixed_dictionaries(
    {
        "event": st.sampled_from(["ADD", "UPDATE", "DELETE", "NOOP"]),
        "id": st.one_of(st.none(), st.integers(-1, 8)),
        "text": st.sampled_from(["", "User lives in Rome"]),
        "new_index": st.integers(0, 7),
    }
)


def check(sets: list[CandidateSet], decisions: list[Any]) -> None:
    assert len(decisions) == len(sets)  # exactly one decision per new fact, in order
    shown = {c.fact_id for cs in sets for c in cs.candidates}
    for i, (cs, d) in enumerate(zip(sets, decisions, strict=True)):
        assert d.new_fact is cs.new
        assert d.target_fact_id is None or d.target_fact_id in shown
        assert d.target_index is None or 0 <= d.target_index < i
        assert not (d.target_fact_id and d.target_index is not None)
        if d.event in ("ADD", "UPDATE"):
            assert d.new_text
        else:
            assert d.new_text is None
            assert d.target_fact_id is not None or d.target_index is not None
        if d.event == "ADD":
            assert d.target_fact_id is None and d.target_index is None


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(candidate_sets)
def test_offline_decide_gives_one_decision_per_new_fact(sets: list[CandidateSet]) -> None:
    check(sets, decide(OfflineProvider(), sets, now=NOW))


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(candidate_sets, st.lists(st.lists(merge_item, max_size=7), min_size=1, max_size=3))
def test_any_model_answer_gives_one_decision_per_new_fact(
    sets: list[CandidateSet], answers: list[list[dict[str, Any]]]
) -> None:
    queue = list(answers)

    def handler(messages: Any, response_model: Any, context: Any) -> Any:
        return {"decisions": queue.pop(0) if len(queue) > 1 else queue[0]}

    check(sets, decide(FakeProvider(handler, retries=2), sets, now=NOW))
