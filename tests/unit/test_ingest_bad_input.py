"""Bad input gets a clear reason and loses nothing; everything else still parses."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from episodic.errors import IngestError
from episodic.ingest import parse_file, parse_with_stats
from episodic.models import Rejected, TurnIn


def line(i: int, **over: object) -> str:
    row = {
        "user_id": "u",
        "stream_id": "s",
        "role": "user",
        "text": f"turn {i}",
        "ts": 1_700_000_000 + i,
    }
    row.update(over)
    return json.dumps(row)


def write(tmp_path: Path, lines: list[str | bytes], name: str = "t.jsonl") -> Path:
    p = tmp_path / name
    p.write_bytes(b"\n".join(x if isinstance(x, bytes) else x.encode() for x in lines) + b"\n")
    return p


def test_hundred_lines_three_corrupt(tmp_path: Path) -> None:
    lines: list[str | bytes] = [line(i) for i in range(1, 101)]
    lines[16] = '{"user_id": "u", "role": "user" "text": "x"}'  # line 17: missing comma
    lines[49] = '{"user_id": "u", "stream_id": "s", "role": "user", "text": "trunc'  # line 50
    lines[89] = b'{"role": "user", "text": "caf\xe9"}'  # line 90: latin-1, not UTF-8
    stats, it = parse_with_stats(write(tmp_path, lines))
    out = list(it)
    turns = [t for t in out if isinstance(t, TurnIn)]
    rejected = [r for r in out if isinstance(r, Rejected)]
    assert len(turns) == 97 and stats.turns == 97
    assert [r.line_no for r in rejected] == [17, 50, 90] and stats.rejected == 3
    assert rejected[0].reason == "line 17: invalid JSON: Expecting ',' delimiter at col 33"
    assert "invalid JSON" in rejected[1].reason
    assert rejected[2].reason == "line 90: invalid UTF-8 at byte 29"
    assert rejected[2].raw == lines[89]
    assert len({t.turn_id for t in turns}) == 97


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (line(2, text=""), "text is empty or whitespace"),
        (line(2, text=" \n\t "), "text is empty or whitespace"),
        (line(2, text=None), "missing field: text"),
        (line(2, text=["a"]), "text must be a string, got list"),
        (line(2, role="robot"), "role 'robot' is not one of"),
        (line(2, role=3), "role must be a string, got int"),
        (line(2, user_id=7), "user_id must be a string, got int"),
        (line(2, user_id="x" * 600), "user_id is longer than 512 chars"),
        (line(2, stream_id="a\x00b"), "stream_id contains control characters"),
        (line(2, kind="rant"), "kind 'rant' is not a known kind"),
        (line(2, ts="2999-01-01T00:00:00Z"), "is in the future"),
        (line(2, ts=-5), "is before 1970"),
        (line(2, ts=1_700_000_000_000), "milliseconds? expected seconds"),
        (line(2, ts=1e300), "out of range"),
        (line(2, ts="tuesday"), "is not ISO 8601"),
        (line(2, ts=[1]), "got list"),
        (line(2, ts=True), "got a boolean"),
        (line(2, meta=[1]), "meta must be an object"),
        ('{"role": "user", "text": "a\\ud800b"}', "lone surrogate"),
        ('{"role": "user", "text": "x", "ts": NaN}', "NaN or Infinity"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"text": "no role"}', "missing field: role"),
        ("[" * 100 + "]" * 100, "nesting deeper than 64 levels"),
        ("[" * 5000 + "]" * 5000, "nesting deeper than 64 levels"),
        ('{"a": ' * 3000 + "1" + "}" * 3000, "nesting deeper than 64 levels"),
    ],
)
def test_each_defect_is_one_clear_reject(tmp_path: Path, bad: str, reason: str) -> None:
    out = list(parse_file(write(tmp_path, [line(1), bad, line(3)])))
    assert [type(x).__name__ for x in out] == ["TurnIn", "Rejected", "TurnIn"]
    rej = out[1]
    assert isinstance(rej, Rejected)
    assert rej.line_no == 2 and reason in rej.reason and rej.reason.startswith("line 2: ")
    assert rej.raw == bad.encode()


def test_control_characters_are_stripped_and_the_turn_kept(tmp_path: Path) -> None:
    out = list(parse_file(write(tmp_path, [line(1, text="a\x00b\x1bc\r\nd\te\x7f")])))
    turn = out[0]
    assert isinstance(turn, TurnIn)
    assert turn.text == "abc\nd\te" and turn.meta["sanitized"] is True


def test_multi_megabyte_text_is_rejected_not_loaded_as_a_turn(tmp_path: Path) -> None:
    big = line(2, text="x" * 3_000_000)
    stats, it = parse_with_stats(write(tmp_path, [line(1), big, line(3)]))
    out = list(it)
    assert isinstance(out[1], Rejected) and "over the limit of 200,000" in out[1].reason
    assert out[1].raw == big.encode()
    assert stats.turns == 2


def test_line_over_the_byte_cap_is_drained_in_bounded_memory(tmp_path: Path) -> None:
    huge = line(2, text="y" * 400_000)  # cap for max_turn_chars=1000 is 16,000 + 1 MiB
    out = list(parse_file(write(tmp_path, [line(1), huge, line(3)]), max_turn_chars=1000))
    rej = out[1]
    assert isinstance(rej, Rejected) and "over the limit of 1,000" in rej.reason
    longer = "z" * (3 << 20)
    out = list(
        parse_file(
            write(tmp_path, [line(1), longer, line(3)], "long.jsonl"), "jsonl", max_turn_chars=1000
        )
    )
    assert [x.position for x in out if isinstance(x, TurnIn)] == ["L1", "L3"]
    rej = out[1]
    assert isinstance(rej, Rejected) and "line is longer than" in rej.reason
    assert len(rej.raw) == 16 * 1000 + (1 << 20)


def test_out_of_order_timestamps_are_kept_in_source_order(tmp_path: Path) -> None:
    out = list(parse_file(write(tmp_path, [line(5), line(1), line(9)])))
    assert [x.position for x in out if isinstance(x, TurnIn)] == ["L1", "L2", "L3"]
    assert [x.meta.get("out_of_order", False) for x in out if isinstance(x, TurnIn)] == [
        False,
        True,
        False,
    ]


def test_future_bound_follows_now(tmp_path: Path) -> None:
    p = write(tmp_path, [line(1, ts="2030-01-01T00:00:00Z")])
    _, it = parse_with_stats(p, now=datetime(2029, 1, 1, tzinfo=UTC))
    assert isinstance(next(it), Rejected)
    _, it = parse_with_stats(p, now=datetime(2031, 1, 1, tzinfo=UTC))
    assert isinstance(next(it), TurnIn)


def test_malformed_whole_json_is_one_reject_with_its_position(tmp_path: Path) -> None:
    p = tmp_path / "chat.json"
    p.write_text(
        '[\n  {"role": "user", "content": "hi"},\n  {"role": "assistant", "content": "yo"\n'
    )
    out = list(parse_file(p, "openai"))
    assert len(out) == 1 and isinstance(out[0], Rejected)
    assert out[0].line_no == 4 and "invalid JSON" in out[0].reason and "whole file" in out[0].reason
    assert out[0].raw == p.read_bytes()


def test_whole_json_bad_message_loses_only_that_message(tmp_path: Path) -> None:
    p = tmp_path / "chat.json"
    msgs = [
        {"role": "user", "content": "one"},
        {"role": "user", "content": {"not": "valid"}},
        "not a message",
        {"role": "assistant", "content": "two", "timestamp": "2999-01-01T00:00:00Z"},
        {"content": "no role"},
        {"role": "assistant", "content": "three"},
    ]
    p.write_text(json.dumps(msgs))
    out = list(parse_file(p, "anthropic"))
    assert [t.text for t in out if isinstance(t, TurnIn)] == ["one", "three"]
    rej = [r for r in out if isinstance(r, Rejected)]
    assert [r.line_no for r in rej] == [2, 3, 4, 5]
    assert rej[0].reason.startswith("message 2: content must be")
    assert json.loads(rej[0].raw) == msgs[1]


def test_a_utf16_file_is_named_so(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_text(line(1) + "\n", encoding="utf-16")
    with pytest.raises(IngestError, match="UTF-16; save it as UTF-8"):
        list(parse_file(p))


def test_a_json_list_of_generic_turns_says_where_they_belong(tmp_path: Path) -> None:
    p = tmp_path / "turns.json"
    p.write_text(json.dumps([{"role": "user", "text": "hi"}, {"role": "user", "content": "ok"}]))
    out = list(parse_file(p))  # read as a list of chat messages: they have `content`
    assert [t.text for t in out if isinstance(t, TurnIn)] == ["ok"]
    (rej,) = [r for r in out if isinstance(r, Rejected)]
    assert rej.reason == (
        "message 1: missing field: content (turns with `text` are generic JSONL: "
        "one JSON object a line)"
    )


def test_bad_utf8_inside_whole_json_rejects_only_its_message(tmp_path: Path) -> None:
    p = tmp_path / "chat.json"
    p.write_bytes(b'[{"role": "user", "content": "ok"}, {"role": "user", "content": "caf\xe9"}]')
    out = list(parse_file(p, "openai"))
    assert isinstance(out[0], TurnIn) and isinstance(out[1], Rejected)
    assert "invalid UTF-8" in out[1].reason and b"caf\xe9" in out[1].raw


def test_jsonl_with_corrupt_first_line_still_streams(tmp_path: Path) -> None:
    p = write(
        tmp_path, ['{"role": "user", "content": ', '{"role": "user", "content": "b"}'], "m.jsonl"
    )
    out = list(parse_file(p, "openai"))
    assert isinstance(out[0], Rejected) and out[0].line_no == 1
    assert isinstance(out[1], TurnIn) and out[1].position == "L2"


def test_empty_file_yields_nothing(tmp_path: Path) -> None:
    p = tmp_path / "empty.jsonl"
    p.write_bytes(b"")
    for fmt in ("auto", "jsonl", "openai", "anthropic", "claude-code", "locomo"):
        assert list(parse_file(p, fmt)) == []


def test_a_rejected_name_from_undecodable_bytes_is_storable() -> None:
    from episodic.models import Rejected

    name = b"\xff\xfeconv".decode("utf-8", "surrogateescape")
    r = Rejected(source="x.json", line_no=1, reason=f"{name}: bad stream id", raw=b"{}")
    assert r.reason == "\\udcff\\udcfeconv: bad stream id"
    r.reason.encode("utf-8")  # Arrow and the terminal need valid UTF-8
