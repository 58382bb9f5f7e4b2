"""Each transcript format on a small fixture written by hand, plus the real LoCoMo file."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from episodic.errors import IngestError
from episodic.ingest import FORMATS, detect_format, make_turn, parse_file, parse_with_stats
from episodic.ingest.locomo import parse_session_date
from episodic.models import Rejected, TurnIn
from episodic.samples import DEMO_TRANSCRIPT

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "ingest"
LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev5.json"
SAMPLE = DEMO_TRANSCRIPT


def split(items: list[TurnIn | Rejected]) -> tuple[list[TurnIn], list[Rejected]]:
    return [t for t in items if isinstance(t, TurnIn)], [
        r for r in items if isinstance(r, Rejected)
    ]


def _rows(turns: list[TurnIn]) -> list[str]:
    """Each turn as "position role kind", in order."""
    return [f"{t.position} {t.role} {t.kind}" for t in turns]


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("generic.jsonl", "jsonl"),
        ("openai_chat.json", "openai"),
        ("openai_messages.jsonl", "openai"),
        ("openai_conversations.jsonl", "openai"),
        ("anthropic_messages.json", "anthropic"),
        ("claude_code_session.jsonl", "claude-code"),
        ("locomo_small.json", "locomo"),
    ],
)
def test_detect_format(name: str, fmt: str) -> None:
    assert fmt in FORMATS
    assert detect_format(FIX / name) == fmt


def test_a_first_line_longer_than_the_head_is_read_whole(tmp_path: Path) -> None:
    """Cut at 64 KiB, a long first line parsed as nothing, so a generic JSONL
    file was taken for one OpenAI document and every line refused."""
    path = tmp_path / "long.jsonl"
    lines = [{"role": "user", "text": "a" * 70_000, "ts": "2025-12-06T10:00:00Z"},
             {"role": "user", "text": "I like chess", "ts": "2025-12-06T10:00:02Z"}]  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert detect_format(path) == "jsonl"
    turns, rejected = split(list(parse_file(path)))
    assert len(turns) == 2 and not rejected


def test_detect_unknown_and_unreadable(tmp_path: Path) -> None:
    odd = tmp_path / "odd.txt"
    odd.write_text("just some prose\n")
    with pytest.raises(IngestError, match="unknown transcript format"):
        detect_format(odd)
    with pytest.raises(IngestError, match="cannot read"):
        parse_file(tmp_path / "missing.jsonl")
    with pytest.raises(IngestError, match="unknown format"):
        parse_file(odd, "yaml")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    said: list[str] = []

    def ingest() -> None:
        try:
            parse_with_stats(fifo, "auto")
            said.append("read")
        except IngestError as e:
            said.append(str(e))

    reader = threading.Thread(target=ingest, daemon=True)
    reader.start()
    reader.join(10)
    if reader.is_alive():  # it waits for a writer: give it one, so the test ends
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
    assert len(said) == 1 and "not a regular file" in said[0], said


def test_generic_jsonl() -> None:
    stats, it = parse_with_stats(FIX / "generic.jsonl")
    turns, rejected = split(list(it))
    assert not rejected and stats.turns == 7 and stats.skipped_blank == 1
    assert [t.position for t in turns] == ["L1", "L2", "L3", "L5", "L6", "L7", "L8"]
    assert [t.kind for t in turns] == [
        "user-question",
        "assistant-answer",
        "user-correction",
        "tool-error",
        "system-event",
        "tool-call",
        "user-question",
    ]
    assert turns[2].event_ts == datetime(2024, 3, 1, 9, 0, 20, tzinfo=UTC)  # epoch seconds
    assert turns[4].meta.get("out_of_order") is True  # 09:00:10 after 09:00:30, same stream
    assert "out_of_order" not in turns[5].meta  # another stream has its own clock
    assert turns[5].meta["tool_name"] == "psql"
    last = turns[6]
    assert (last.user_id, last.stream_id) == ("default", "generic")
    assert last.meta["synthetic_ts"] is True
    assert all(t.source == str((FIX / "generic.jsonl").resolve()) for t in turns)


def test_ids_from_arguments_override_the_source() -> None:
    turns, _ = split(list(parse_file(FIX / "generic.jsonl", user_id="bob", stream_id="x")))
    assert {(t.user_id, t.stream_id) for t in turns} == {("bob", "x")}


def test_openai_list_with_tool_calls() -> None:
    turns, rejected = split(list(parse_file(FIX / "openai_chat.json")))
    assert not rejected
    assert _rows(turns) == [
        "m0 system system-event",
        "m1 user user-question",
        "m2.0 assistant tool-call",
        "m2.1 assistant tool-call",
        "m3 tool tool-error",
        "m4 tool tool-success",
        "m5 assistant assistant-answer",
        "m6 user user-correction",
    ]
    assert turns[2].text == 'bash({"cmd": "pytest -q"})'
    assert turns[2].meta["tool_call_id"] == "call_1" and turns[4].meta["tool_call_id"] == "call_1"
    assert "[image_url]" in turns[7].text  # a non-text part leaves a placeholder
    assert turns[0].event_ts == datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
    assert {t.stream_id for t in turns} == {"openai_chat"}


def test_openai_jsonl_of_messages_streams_and_rejects_per_line() -> None:
    stats, it = parse_with_stats(FIX / "openai_messages.jsonl")
    turns, rejected = split(list(it))
    assert [t.position for t in turns] == ["L1", "L2", "L4"]
    assert [r.line_no for r in rejected] == [3]
    assert "content must be a string" in rejected[0].reason
    assert rejected[0].raw == b'{"role": "user", "content": 42}'
    ts = [t.event_ts for t in turns]
    assert all(t.meta["synthetic_ts"] for t in turns)
    assert [(b - a).total_seconds() for a, b in zip(ts, ts[1:], strict=False)] == [1.0, 1.0]


def test_openai_jsonl_of_conversations() -> None:
    turns, _ = split(list(parse_file(FIX / "openai_conversations.jsonl")))
    assert [(t.stream_id, t.position) for t in turns] == [
        ("conv-a", "L1/m0"),
        ("conv-a", "L1/m1"),
        ("openai_conversations:2", "L2/m0"),
    ]


def test_anthropic_blocks() -> None:
    stats, it = parse_with_stats(FIX / "anthropic_messages.json")
    turns, rejected = split(list(it))
    assert not rejected
    assert _rows(turns) == [
        "system system system-event",
        "m0 user user-question",
        "m1.0 assistant assistant-answer",
        "m1.1 assistant tool-call",
        "m2 tool tool-error",
        "m3 assistant tool-call",
        "m4 tool tool-success",
        "m6 assistant assistant-answer",
    ]
    assert not any("manifest first" in t.text for t in turns)  # thinking is dropped
    assert stats.skipped_other == 1  # the thinking-only message
    assert (
        turns[0].event_ts == turns[1].event_ts
    )  # the system prompt takes the first message's time
    assert not any(t.meta.get("out_of_order") for t in turns)
    assert turns[3].meta == {"tool_name": "kubectl", "tool_use_id": "toolu_01"}


def test_claude_code_session() -> None:
    stats, it = parse_with_stats(FIX / "claude_code_session.jsonl")
    turns, rejected = split(list(it))
    assert {t.stream_id for t in turns} == {"sess-42"}
    assert [(t.position, t.kind) for t in turns] == [
        ("u-001", "user-question"),
        ("a-001.0", "assistant-answer"),
        ("a-001.1", "tool-call"),
        ("u-002", "tool-error"),
        ("a-002", "tool-call"),
        ("u-004", "tool-success"),
        ("sys-001", "system-event"),
        ("u-007", "user-correction"),
        ("a-003", "assistant-answer"),
        ("u-008", "other"),
    ]
    # the summary line, the isCompactSummary entry and the continuation preamble
    assert stats.skipped_derived == 3
    assert not any("Summary:" in t.text or "being continued" in t.text for t in turns)
    assert stats.skipped_other == 2  # isMeta caveat, file-history-snapshot
    assert [(r.line_no, r.reason) for r in rejected] == [
        (15, "line 15: timestamp 'not a time' is not ISO 8601"),
        (16, "line 16: message must be an object, got str"),
    ]
    assert stats.turns + stats.rejected + stats.skipped == 16 + 1  # 16 lines, one holds two turns
    assert {r.stream_id for r in rejected} == {"sess-42"}  # kept under the session's stream


def test_a_claude_code_message_not_an_object_says_so(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    entry = {"type": "user", "uuid": "u-1", "sessionId": "sess-9", "message": "oops",
             "timestamp": "2025-03-01T10:00:00Z"}  # fmt: skip
    path.write_text(json.dumps(entry) + "\n", encoding="utf-8")
    _, rejected = split(list(parse_file(path, "claude-code")))
    assert [(r.reason, r.stream_id) for r in rejected] == [
        ("line 1: message must be an object, got str", "sess-9")
    ]


def test_locomo_fixture() -> None:
    stats, it = parse_with_stats(FIX / "locomo_small.json")
    turns, rejected = split(list(it))
    x1 = [t for t in turns if t.stream_id == "conv-x1"]
    assert [t.meta["dia_id"] for t in x1] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D10:1"]
    assert [t.role for t in x1[:2]] == ["user", "assistant"]
    assert x1[1].meta["speaker"] == "Ben" and x1[1].meta["blip_caption"].startswith("a photo")
    assert x1[0].event_ts == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert (x1[1].event_ts - x1[0].event_ts).total_seconds() == 30
    assert x1[5].event_ts == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)  # session 10 sorts after 2
    assert x1[0].position == "conv-x1/D1:1"
    reasons = [r.reason for r in rejected]
    assert len(reasons) == 3
    assert "is not a date like" in reasons[0]
    assert "neither speaker_a nor speaker_b" in reasons[1]
    assert "empty or whitespace" in reasons[2]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9, tzinfo=UTC)),
        ("12:30 pm on 1 Jan, 2024", datetime(2024, 1, 1, 12, 30, tzinfo=UTC)),
        ("9:05 AM on 1 January 2024", datetime(2024, 1, 1, 9, 5, tzinfo=UTC)),
        ("13:00 pm on 1 May, 2023", None),
        ("1:00 pm on 30 February, 2023", None),
        ("yesterday", None),
    ],
)
def test_locomo_dates(text: str, expected: datetime | None) -> None:
    assert parse_session_date(text) == expected


def test_locomo_real_file() -> None:
    if not LOCOMO.exists():
        pytest.skip(f"LoCoMo data not found at {LOCOMO}")
    stats, it = parse_with_stats(LOCOMO)
    turns, rejected = split(list(it))
    assert stats.format == "locomo" and not rejected
    per_stream = Counter(t.stream_id for t in turns)
    assert sorted(per_stream) == ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43"]
    assert all(t.meta["dia_id"].startswith("D") for t in turns)
    assert len({t.turn_id for t in turns}) == len(turns)
    assert all(
        datetime(2022, 1, 1, tzinfo=UTC) < t.event_ts < datetime(2025, 1, 1, tzinfo=UTC)
        for t in turns
    )
    conv26 = [t for t in turns if t.stream_id == "conv-26"]
    assert conv26[0].event_ts == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert max(t.meta["session"] for t in conv26) == 19  # sessions 20-35 have dates but no turns


def test_demo_sample_parses_cleanly() -> None:
    stats, it = parse_with_stats(SAMPLE)
    turns, rejected = split(list(it))
    assert not rejected and 80 <= len(turns) <= 120
    kinds = Counter(t.kind for t in turns)
    assert kinds["user-correction"] >= 2 and kinds["tool-error"] >= 2 and kinds["system-event"] >= 2
    assert {t.user_id for t in turns} == {"demo"}
    text = " ".join(t.text for t in turns)
    for needle in (
        "I live in Paris",
        "I moved to Berlin",
        "Postgres 16",
        "dog named Rex",
        "Rex died",
        "<new_subtask>",
    ):
        assert needle in text
    coding = [t.event_ts for t in turns if t.stream_id == "coding-agent"]
    assert max((b - a).total_seconds() for a, b in zip(coding, coding[1:], strict=False)) > 30 * 60


def test_harness_make_turn() -> None:
    ts = datetime(2025, 1, 1, 12, tzinfo=UTC)
    a = make_turn("u", "s", "user", "no, use the staging db", ts=ts)
    b = make_turn("u", "s", "user", "no, use the staging db", ts=ts)
    assert a.kind == "user-correction" and a.turn_id == b.turn_id and a.source == "api"
    assert (
        make_turn("u", "s", "tool", "Traceback (most recent call last):", ts=ts).kind
        == "tool-error"
    )
    assert make_turn("u", "s", "assistant", "ls", ts=ts, tool_call=True).kind == "tool-call"
    assert make_turn("u", "s", "user", "hi\x00 there", ts=ts).text == "hi there"
    with pytest.raises(ValueError, match="role"):
        make_turn("u", "s", "robot", "hi")
    with pytest.raises(ValueError):
        make_turn("u", "s", "user", "   ")
