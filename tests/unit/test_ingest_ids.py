"""Turn ids: the transcript's own ids where it has them, else stream, position
and content; never the file's path. A request log that repeats the growing
conversation on every line gives each turn once."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from episodic.ingest import make_turn, parse_file, parse_with_stats
from episodic.models import Rejected, TurnIn

FIX = Path(__file__).parent.parent / "fixtures" / "ingest"
T0 = datetime(2025, 5, 1, 8, 0, tzinfo=UTC)


def turns_of(path: Path, fmt: str = "auto", **kw: Any) -> list[TurnIn]:
    return [t for t in parse_file(path, fmt, **kw) if isinstance(t, TurnIn)]


def write_lines(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def copy_elsewhere(src: Path, dest_dir: Path, name: str | None = None) -> Path:
    """A copy in another folder, with another mtime (the synthetic clock starts there)."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / (name or src.name)
    shutil.copyfile(src, dest)
    later = src.stat().st_mtime + 86_400 * 3
    os.utime(dest, (later, later))
    return dest


@pytest.mark.parametrize("name", sorted(p.name for p in FIX.iterdir()))
def test_a_copy_in_another_folder_has_the_same_ids(name: str, tmp_path: Path) -> None:
    src = copy_elsewhere(FIX / name, tmp_path / "a")
    dup = copy_elsewhere(FIX / name, tmp_path / "b" / "deeper")
    first, second = turns_of(src), turns_of(dup)
    assert first, name
    assert first[0].source != second[0].source  # the paths differ ...
    assert [t.turn_id for t in first] == [t.turn_id for t in second]  # ... the ids do not
    assert len({t.turn_id for t in first}) == len(first)


def test_synthetic_times_differ_between_copies_but_not_the_ids(tmp_path: Path) -> None:
    rows = [{"role": "user", "text": "where are the logs?"},
            {"role": "assistant", "text": "under /var/log/app"}]  # fmt: skip
    src = write_lines(tmp_path / "chat.jsonl", rows)
    dup = copy_elsewhere(src, tmp_path / "b")
    first, second = turns_of(src), turns_of(dup)
    assert all(t.meta.get("synthetic_ts") for t in first + second)
    assert [t.event_ts for t in first] != [t.event_ts for t in second]
    assert [t.turn_id for t in first] == [t.turn_id for t in second]


def test_the_source_is_not_part_of_the_id() -> None:
    a = make_turn("u", "s", "user", "hello", ts=T0)
    b = a.model_copy(update={"source": "/elsewhere/x.jsonl"})
    assert a.turn_id == b.turn_id


def test_two_identical_turns_in_one_second_are_two(tmp_path: Path) -> None:
    row = {"user_id": "u", "stream_id": "s", "role": "user", "text": "ok", "ts": T0.isoformat()}
    turns = turns_of(write_lines(tmp_path / "t.jsonl", [row, row, row]))
    assert len({t.turn_id for t in turns}) == 3
    assert {(t.text, t.event_ts) for t in turns} == {("ok", T0)}


def test_position_content_ids_are_scoped_by_user_and_stream(tmp_path: Path) -> None:
    row = {"role": "user", "text": "same words", "ts": T0.isoformat()}
    rows = [{**row, "user_id": u, "stream_id": s} for u in ("alice", "bob") for s in ("s1", "s2")]
    turns = turns_of(write_lines(tmp_path / "t.jsonl", rows))
    assert len(turns) == 4 and len({t.position for t in turns}) == 4
    # the same line of four one-line files: only user and stream tell them apart
    ids = {turns_of(write_lines(tmp_path / "t.jsonl", [r]))[0].turn_id for r in rows}
    assert len(ids) == 4


def test_content_is_part_of_a_position_id(tmp_path: Path) -> None:
    """Another file of the same stream: line 1 there is another turn than line 1 here."""
    day1 = write_lines(tmp_path / "day1.jsonl", [{"stream_id": "s", "role": "user", "text": "a"}])
    day2 = write_lines(tmp_path / "day2.jsonl", [{"stream_id": "s", "role": "user", "text": "b"}])
    assert turns_of(day1)[0].position == turns_of(day2)[0].position == "L1"
    assert turns_of(day1)[0].turn_id != turns_of(day2)[0].turn_id


# ---- Claude Code: the entry's uuid, the stream from sessionId ------------------------------


def cc(uuid: str, text: str, session: str = "sess-1", **extra: Any) -> dict[str, Any]:
    return {"type": "user", "sessionId": session, "uuid": uuid, "timestamp": T0.isoformat(),
            "message": {"role": "user", "content": text}, **extra}  # fmt: skip


def test_claude_code_ids_come_from_the_uuid(tmp_path: Path) -> None:
    first = turns_of(write_lines(tmp_path / "a.jsonl", [cc("u-1", "hello"), cc("u-2", "more")]))
    # the same entries elsewhere in a file of another name, one rewritten: same turns
    moved = [cc("u-0", "earlier"), cc("u-2", "more"), cc("u-1", "hello (edited)")]
    second = turns_of(write_lines(tmp_path / "renamed.jsonl", moved))
    assert {t.stream_id for t in first + second} == {"sess-1"}  # not the file name
    by_uuid = {t.meta["uuid"]: t.turn_id for t in second}
    assert by_uuid["u-1"] == first[0].turn_id and by_uuid["u-2"] == first[1].turn_id
    assert by_uuid["u-0"] not in {t.turn_id for t in first}


def test_claude_code_uuid_ids_are_scoped_by_user_and_session(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "a.jsonl", [cc("u-1", "hi", "s1"), cc("u-1", "hi", "s2")])
    one, other = turns_of(path)
    assert one.turn_id != other.turn_id  # same uuid, two sessions
    alice = turns_of(path, user_id="alice")[0]
    bob = turns_of(path, user_id="bob")[0]
    assert alice.turn_id != bob.turn_id


def test_claude_code_blocks_of_one_entry_get_their_own_ids() -> None:
    turns = turns_of(FIX / "claude_code_session.jsonl")
    a1 = [t for t in turns if t.meta.get("uuid") == "a-001"]
    assert [t.position for t in a1] == ["a-001.0", "a-001.1"]
    assert len({t.turn_id for t in a1}) == 2


def test_claude_code_entry_without_uuid_falls_back_to_line_and_content(tmp_path: Path) -> None:
    row = cc("", "no uuid here")
    first = turns_of(write_lines(tmp_path / "a.jsonl", [row, row]))
    assert [t.position for t in first] == ["L1", "L2"]
    assert first[0].turn_id != first[1].turn_id


# ---- chat formats: message ids, and request logs --------------------------------------------


def conversation(n: int) -> list[dict[str, Any]]:
    """The first n messages of one 13-message conversation."""
    roles = ["user", "assistant"]
    return [{"role": roles[i % 2], "content": f"message {i}: step {i} of the rollout"}
            for i in range(n)]  # fmt: skip


def request_log(path: Path, sizes: list[int], **fields: Any) -> Path:
    rows = [{"model": "gpt-4o", "created": 1_700_000_000 + k, "messages": conversation(n), **fields}
            for k, n in enumerate(sizes)]  # fmt: skip
    return write_lines(path, rows)


def test_openai_request_log_gives_each_turn_once(tmp_path: Path) -> None:
    stats, it = parse_with_stats(request_log(tmp_path / "requests.jsonl", [1, 5, 10, 13]))
    turns = [t for t in it if isinstance(t, TurnIn)]
    assert len(turns) == 13  # not 1 + 5 + 10 + 13 = 29
    assert [t.text for t in turns] == [m["content"] for m in conversation(13)]
    assert {t.stream_id for t in turns} == {"requests:1"}
    assert [t.position for t in turns] == [f"L1/m{i}" for i in range(13)]
    assert stats.skipped_repeated == 1 + 5 + 10 and stats.turns == 13


def test_request_log_ids_match_whether_read_whole_or_growing(tmp_path: Path) -> None:
    """The last request alone, or the log as it grew: the same 13 ids."""
    whole = turns_of(request_log(tmp_path / "requests.jsonl", [1, 5, 10, 13]))
    early = turns_of(request_log(tmp_path / "requests.jsonl", [1, 5]))
    assert [t.turn_id for t in early] == [t.turn_id for t in whole[:5]]
    last_only = turns_of(request_log(tmp_path / "requests.jsonl", [13]))
    assert [t.turn_id for t in last_only] == [t.turn_id for t in whole]


def test_request_log_with_two_interleaved_conversations(tmp_path: Path) -> None:
    other = [{"role": "user", "content": "another session"},
             {"role": "assistant", "content": "hello again"}]  # fmt: skip
    rows = [
        {"messages": conversation(2)},
        {"messages": other[:1]},
        {"messages": conversation(4)},
        {"messages": other},
        {"messages": conversation(4)},  # a retried request: nothing new
    ]
    turns = turns_of(write_lines(tmp_path / "log.jsonl", rows))
    assert [(t.stream_id, t.position) for t in turns] == [
        ("log:1", "L1/m0"),
        ("log:1", "L1/m1"),
        ("log:2", "L2/m0"),
        ("log:1", "L1/m2"),
        ("log:1", "L1/m3"),
        ("log:2", "L2/m1"),
    ]


def test_a_request_that_changes_history_is_not_a_continuation(tmp_path: Path) -> None:
    edited = conversation(3)
    edited[1] = {"role": "assistant", "content": "a different answer"}
    turns = turns_of(write_lines(tmp_path / "log.jsonl", [{"messages": conversation(2)},
                                                         {"messages": edited}]))  # fmt: skip
    assert {t.stream_id for t in turns} == {"log:1", "log:2"}
    assert len(turns) == 2 + 3


def test_requests_under_other_conversation_ids_do_not_chain(tmp_path: Path) -> None:
    rows = [{"conversation_id": "c1", "messages": conversation(2)},
            {"conversation_id": "c2", "messages": conversation(3)}]  # fmt: skip
    turns = turns_of(write_lines(tmp_path / "log.jsonl", rows))
    assert [t.stream_id for t in turns] == ["c1", "c1", "c2", "c2", "c2"]


def test_anthropic_request_log_keeps_the_system_prompt_once(tmp_path: Path) -> None:
    rows = [{"system": "You are terse.", "messages": conversation(n)} for n in (1, 3, 5)]
    stats, it = parse_with_stats(write_lines(tmp_path / "log.jsonl", rows), "anthropic")
    turns = [t for t in it if isinstance(t, TurnIn)]
    assert [t.position for t in turns] == ["L1/system"] + [f"L1/m{i}" for i in range(5)]
    # another system prompt is another conversation
    rows.append({"system": "You are verbose.", "messages": conversation(6)})
    again = turns_of(write_lines(tmp_path / "log.jsonl", rows), "anthropic")
    assert len(again) == 6 + 7 and again[6].stream_id == "log:4"
    assert stats.skipped_repeated == 2 * 1 + 1 + 3  # system twice, then 1 and 3 messages


def test_whole_document_of_growing_conversations(tmp_path: Path) -> None:
    path = tmp_path / "convs.json"
    path.write_text(json.dumps([{"messages": conversation(n)} for n in (2, 4, 6)]), "utf-8")
    turns = turns_of(path, "openai")
    assert [t.position for t in turns] == [f"c0/m{i}" for i in range(6)]
    assert {t.stream_id for t in turns} == {"convs:0"}


def test_a_message_id_is_the_turn_id(tmp_path: Path) -> None:
    a = {"id": "msg_01", "role": "user", "content": "deploy it"}
    b = {"id": "msg_02", "role": "assistant", "content": "done"}
    first = turns_of(write_lines(tmp_path / "one.jsonl", [{"id": "c", "messages": [a, b]}]))
    # the same messages at other positions of the same stream: the same turns
    later = [{"id": "c", "messages": [{"role": "user", "content": "before"}, b, a]}]
    second = turns_of(write_lines(tmp_path / "two.jsonl", later))
    assert second[1].turn_id == first[1].turn_id and second[2].turn_id == first[0].turn_id
    assert second[0].turn_id not in {t.turn_id for t in first}


def test_message_id_with_several_parts_and_blank_ids(tmp_path: Path) -> None:
    call = {"id": "call_1", "function": {"name": "sh", "arguments": "{}"}}
    msg = {"id": "msg_9", "role": "assistant", "content": "running", "tool_calls": [call]}
    blank = {"id": " ", "role": "user", "content": "x"}
    out = list(parse_file(write_lines(tmp_path / "m.jsonl", [msg, blank, blank]), "openai"))
    turns = [t for t in out if isinstance(t, TurnIn)]
    assert not [r for r in out if isinstance(r, Rejected)]
    assert [t.native_id for t in turns] == ["msg_9.0", "msg_9.1", "", ""]
    assert len({t.turn_id for t in turns}) == 4  # a blank id is no id: line and content


def test_locomo_ids_come_from_dia_id(tmp_path: Path) -> None:
    turns = turns_of(FIX / "locomo_small.json")
    assert all(t.native_id == t.meta["dia_id"] for t in turns)


def test_harness_position_is_the_callers_id() -> None:
    a = make_turn("u", "s", "user", "first text", ts=T0, position="m-1")
    b = make_turn("u", "s", "user", "retried text", ts=T0 + timedelta(seconds=5), position="m-1")
    assert a.turn_id == b.turn_id
    c = make_turn("u", "s", "user", "first text", ts=T0)
    d = make_turn("u", "s", "user", "first text", ts=T0 + timedelta(seconds=1))
    assert c.turn_id != d.turn_id
