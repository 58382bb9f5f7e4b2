"""The pure pieces of the shipped search: weighted RRF, fixed-scale scores,
turn documents and the context around a hit."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from episodic.lexical import tokens
from episodic.retrieval import (
    PASSAGE_TURNS,
    RRF_K,
    W_DENSE,
    W_TEXT,
    ScoreWeights,
    context_rows,
    day_words,
    days_of,
    doc_before,
    fixed_score,
    named_speaker,
    naming_the_user,
    passage_relevance,
    relevance,
    rrf_scores,
    turn_doc,
    turn_line,
    without_speakers,
)
from episodic.service.turn_set import TurnSet

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def test_weighted_rrf_orders_by_weight_and_rank() -> None:
    fused = dict(rrf_scores([["a", "b"], ["b", "c"]], k=60, weights=[1.0, 0.5]))
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 0.5 / 61)
    assert fused["c"] == pytest.approx(0.5 / 62)
    with pytest.raises(ValueError):
        rrf_scores([["a"]], weights=[1.0, 1.0])
    with pytest.raises(ValueError):
        rrf_scores([["a"]], weights=[-1.0])


def test_relevance_is_on_a_fixed_scale() -> None:
    top = (W_TEXT + W_DENSE) / (RRF_K + 1)
    assert relevance(top) == 1.0
    assert relevance(0.0) == 0.0
    # a lone weak candidate (50th in one ranking only) stays weak: no min-max
    # over the candidates
    assert relevance(W_DENSE / (RRF_K + 50)) < 0.3


def test_fixed_score_components_and_weights() -> None:
    w = ScoreWeights(recency_weight=0.1, importance_weight=0.1, half_life_hours=24.0)
    c = fixed_score((W_TEXT + W_DENSE) / (RRF_K + 1), T0 - timedelta(hours=24), 5.0, T0, w)
    assert (c.relevance, c.recency, c.importance) == (1.0, 0.5, 0.5)
    assert c.score == pytest.approx(1.0 + 0.05 + 0.05)
    assert fixed_score(0.0, T0, 99.0, T0, w).importance == 1.0  # clipped to the scale


def test_turn_doc_holds_the_turn_before() -> None:
    line = turn_line("Jon", "I lost my job", "a photo of a desk")
    assert line == "Jon: I lost my job [image: a photo of a desk]"
    assert turn_doc(line, "Gina: what happened?") == "Gina: what happened?\n" + line
    assert turn_doc(line, None) == line


def test_the_days_a_turn_names_are_resolved_against_the_day_it_was_said() -> None:
    said = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
    assert days_of("I played basketball", said) == "1 Jan January 2024"
    assert days_of("Got back Yesterday, and last night I slept", said).split("\n") == [
        "1 Jan January 2024",
        "31 Dec December 2023",
    ]
    assert days_of("see you tomorrow", said).split("\n")[1] == "2 Jan January 2024"
    assert days_of("yesterdays are gone", said) == "1 Jan January 2024"  # whole words only


def test_a_document_starts_with_the_day_in_the_words_questions_use() -> None:
    import locale

    day = day_words(datetime(2023, 12, 29, 23, 59, tzinfo=UTC))
    assert day == "29 Dec December 2023"
    assert day_words(datetime(2024, 1, 5)) == "5 Jan January 2024"
    line = "Kate: made pasta with ham and peas today"
    doc = turn_doc(line, "Elise: what did you cook?", day)
    assert doc.split("\n") == [day, "Elise: what did you cook?", line]
    assert doc.rsplit("\n", 1)[-1] == line  # the turn's own line stays last
    before = locale.setlocale(locale.LC_TIME)
    try:  # English whatever the process's locale
        locale.setlocale(locale.LC_TIME, "de_DE.UTF-8")
    except locale.Error:
        pass
    try:
        assert day_words(datetime(2024, 3, 1)) == "1 Mar March 2024"
    finally:
        locale.setlocale(locale.LC_TIME, before)


def test_a_run_of_one_speakers_messages_reads_back_to_what_drew_it() -> None:
    # nearest first, as the stream gives them
    run = [("bo", "bo: at Yosemite"), ("bo", "bo: went hiking"), ("al", "al: weekend?")]
    assert doc_before("bo", run) == "al: weekend?\nbo: went hiking\nbo: at Yosemite"
    assert doc_before("al", run) == "bo: at Yosemite"  # another speaker's turn: just it
    long = [("bo", f"bo: part {i}") for i in range(6)]
    assert doc_before("bo", long) == "bo: part 2\nbo: part 1\nbo: part 0"  # RUN_LINES
    assert doc_before("bo", []) is None


def test_context_is_hit_first_and_stops_at_gaps() -> None:
    times = [T0, T0 + timedelta(minutes=1), T0 + timedelta(minutes=2), T0 + timedelta(hours=5)]
    assert context_rows([1, 2, 3, 4], times, 1, n=1) == [1, 0, 2]
    assert context_rows([1, 2, 3, 4], times, 2, n=1) == [2, 1]  # 3 is five hours later
    assert context_rows([1, 2, 4, 5], times, 1, n=1) == [1, 0]  # seq 3 missing: a hole


def test_a_turn_hit_returns_itself_alone() -> None:
    # its neighbours come back only when they rank on their own (passage relevance)
    times = [T0 + timedelta(minutes=i) for i in range(3)]
    assert context_rows([1, 2, 3], times, 1) == [1]


def test_passage_relevance_is_half_own_half_the_mean_around() -> None:
    n = PASSAGE_TURNS
    assert passage_relevance(1.0, []) == 0.5  # a lone hit
    assert passage_relevance(1.0, [1.0] * (2 * n)) == 1.0  # still on [0, 1]
    assert passage_relevance(0.2, [0.8] * n) > passage_relevance(0.4, [])
    top = (W_TEXT + W_DENSE) / (RRF_K + 1)
    c = fixed_score(top, T0, 0.0, T0, ScoreWeights(), around=[top] * n)
    assert c.relevance == pytest.approx(0.75)
    with pytest.raises(ValueError):
        passage_relevance(1.0, [], n=0)


def test_the_speakers_names_leave_the_query() -> None:
    names = {"Nicolas", "Nebraas"}
    q = "What games are Nebraas and Nicolas discussing?"
    assert without_speakers(q, names) == "What games are and discussing?"
    assert without_speakers("What is Nicolas’s dog called?", names) == "What is dog called?"
    assert without_speakers("Nicolas?", names) == "Nicolas?"  # names alone: kept
    assert without_speakers("what car does the user drive", set()) == "what car does the user drive"
    # a lowercase label is not a name: its words stay in the question
    q = "which code review found the bug"
    assert without_speakers(q, {"code-review-bot"}) == q
    assert without_speakers("what did Ann Lee say", {"Ann Lee"}) == "what did say"
    assert without_speakers("what did elise cook", {"elise"}) == "what did cook"


def test_the_one_speaker_a_question_names() -> None:
    people = {"Nicolas", "Nebraas", "Ann Lee", "code-review-bot"}
    assert named_speaker("What is Nicolas’s dog called?", people) == "Nicolas"
    assert named_speaker("what did ann say about the trip", people) == "Ann Lee"
    assert named_speaker("What games do Nicolas and Nebraas play?", people) is None  # two
    assert named_speaker("what does the code review say", people) is None  # a label, not a person
    assert named_speaker("where does the user live", set()) is None  # roles are not speakers


def test_an_agents_stream_names_its_parties_not_its_tools() -> None:
    """Turns labelled by their role alone: "the user" and "the assistant" are
    parties a question names, "tool" is not; a chat's people are named as
    before and its roles are not parties (each turn has a name)."""
    agent = TurnSet(4)
    agent.add_raw(_turns([("user", None), ("assistant", None), ("tool", None)]))
    assert agent.speakers == {"user", "assistant"}
    assert named_speaker("where does the user live", agent.speakers) == "user"
    assert without_speakers("where does the user live", agent.speakers) == "where does the live"
    assert named_speaker("which tool failed", agent.speakers) is None
    chat = TurnSet(4)
    chat.add_raw(_turns([("user", "Nicolas"), ("assistant", "Nebraas")]))
    assert chat.speakers == {"Nicolas", "Nebraas"}
    assert named_speaker("where does the user live", chat.speakers) is None


def test_a_question_naming_the_user_by_their_id_asks_about_the_user() -> None:
    """Facts are written "User ...": the id the memory keeps a user under,
    written as a name, reads as "the user" when facts are searched; an id
    that is also an ordinary word ("default", "june") is left alone where a
    word or a date could stand."""
    assert naming_the_user("Where does Alice live?", "alice") == "Where does the user live?"
    assert naming_the_user("Alice's job?", "alice") == "The user's job?"
    assert naming_the_user("What is Alice’s job", "alice") == "What is the user’s job"
    assert naming_the_user("Where does Ann Lee work", "Ann Lee") == "Where does the user work"
    # not as a name: lower case, a first word, a longer word, an id of no name's shape
    assert naming_the_user("where does alice live", "alice") == "where does alice live"
    assert naming_the_user("Default timeout?", "default") == "Default timeout?"
    assert naming_the_user("Is Alicea here", "alice") == "Is Alicea here"
    assert naming_the_user("What did Conv say", "conv-26") == "What did Conv say"
    # a name that is also a month, where it reads as a date
    assert naming_the_user("What happened in June?", "june") == "What happened in June?"
    assert naming_the_user("Plans for May 3?", "may") == "Plans for May 3?"
    assert naming_the_user("Does June like tea", "june") == "Does the user like tea"


def test_the_users_own_question_asks_the_facts_about_the_user() -> None:
    """An agent passes its user's question on as said: "I" and "my" are the
    user whom every fact names; the grammar follows where it is cheap to."""
    assert naming_the_user("what phone do I have", "demo") == "what phone does the user have"
    assert naming_the_user("where do I live?", "u1") == "where does the user live?"
    assert naming_the_user("which language am I learning", "u1") == (
        "which language the user is learning"
    )
    assert naming_the_user("how many engineers are on my team", "u1") == (
        "how many engineers are on the user's team"
    )
    assert naming_the_user("What did I decide about it?", "u1") == (
        "What did the user decide about it?"
    )
    # no person in it, or a word that only holds the letters: unchanged
    assert naming_the_user("how big is the docker image now", "u1") == (
        "how big is the docker image now"
    )
    assert naming_the_user("Is it in Iowa, or Miami?", "u1") == "Is it in Iowa, or Miami?"


def test_a_tool_turns_document_holds_no_turn_before_it() -> None:
    """The request's words draw the request and the agent's reply to it, not
    the tool call it ran or the tool's output ("why were users logged out"
    drew "grep -rn ..." after "Users are getting logged out")."""
    ts = TurnSet(4)
    ts.add_raw(
        _turns(
            [("user", None), ("assistant", None), ("tool", None), ("assistant", None)],
            texts=["users are getting logged out", "grep -rn refresh app/auth/",
                   "app/auth/tokens.py:88: def refresh", "the clock on auth-1 is ahead"],
            kinds=["user-question", "tool-call", "tool-success", "assistant-answer"],
        )
    )  # fmt: skip
    drawn = {ts.rows[p].turn_id for p, _ in ts.bm25.top(tokens("logged out"), 10)}
    assert drawn == {"t0"}, drawn  # the tool call and its output: their own words only
    assert {ts.rows[p].turn_id for p, _ in ts.bm25.top(tokens("refresh"), 10)} == {
        "t1", "t2", "t3",  # the reply after the tool's output still holds it
    }  # fmt: skip


def _turns(
    said: list[tuple[str, str | None]],
    texts: list[str] | None = None,
    kinds: list[str] | None = None,
) -> pa.Table:
    t0 = datetime(2025, 3, 1, 9, 0)
    return pa.table({
        "turn_id": [f"t{i}" for i in range(len(said))],
        "stream_id": ["s"] * len(said),
        "seq": list(range(len(said))),
        "role": [role for role, _ in said],
        "kind": kinds or ["other"] * len(said),
        "text": texts or [f"turn {i}" for i in range(len(said))],
        "event_ts": [t0 + timedelta(minutes=i) for i in range(len(said))],
        "meta": [json.dumps({"speaker": name} if name else {}) for _, name in said],
    })  # fmt: skip
