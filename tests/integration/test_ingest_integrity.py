"""Every way in rejects the bad item and keeps the rest (issue 32, findings
3, 5, 6, 7): a huge integer timestamp, a repeated short message, the client's
`id` on files, and quarantine rows that always carry their user."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from episodic.adapters.embedded import Memory
from storage import filters
from storage.frames import frame
from tests.integration.helpers import make_memory

HUGE = "9" * 400  # overflows a float; Python still parses it as an int


def _rejected(memory: Memory, user: str) -> list[dict[str, Any]]:
    tbl = memory.rt.store.table("rejected_input")
    rows: list[dict[str, Any]] = tbl.search().where(filters.user(user).lance).limit(1000).to_list()
    return rows


def test_a_huge_integer_timestamp_is_one_rejection_over_the_live_path(tmp_path: Path) -> None:
    memory = make_memory(tmp_path)
    batch = json.loads(
        '[{"role": "user", "text": "before", "ts": 1700000000},'
        f' {{"role": "user", "text": "bad", "ts": {HUGE}}},'
        ' {"role": "assistant", "text": "after", "ts": 1700000005}]'
    )
    receipt = memory.add("u", batch)
    assert receipt.accepted == 2
    assert [r.index for r in receipt.rejected] == [1]
    assert "out of range" in receipt.rejected[0].reason
    assert [t["text"] for t in frame(memory.rt.store, "raw_turns", "u").to_pylist()] == [
        "before",
        "after",
    ]
    assert len(_rejected(memory, "u")) == 1


def test_a_huge_integer_timestamp_in_a_file_loses_only_its_line(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    path = tmp_path / "chat.jsonl"
    path.write_text(
        '{"role": "user", "text": "before", "ts": 1700000000}\n'
        f'{{"role": "user", "text": "bad", "ts": {HUGE}}}\n'
        f'{{"role": "user", "text": "worse", "ts": {"9" * 5000}}}\n'
        '{"role": "assistant", "text": "after", "ts": 1700000005}\n',
        encoding="utf-8",
    )
    report = memory.ingest(path, "jsonl", user_id="u")
    assert (report.accepted, report.rejected) == (2, 2)
    assert {r["line_no"] for r in _rejected(memory, "u")} == {2, 3}
    # each reason names its line once ("line 2: ...", not "line 2: line 2: ...")
    assert [r.split(":")[0] for r in report.as_dict()["first_reasons"]] == ["line 2", "line 3"]
    assert not any(r.count("line ") > 1 for r in report.as_dict()["first_reasons"])


def test_a_repeated_yes_without_id_or_time_is_kept_twice(tmp_path: Path) -> None:
    memory = make_memory(tmp_path)
    first = memory.add("u", [{"role": "user", "text": "yes"}])
    second = memory.add("u", [{"role": "user", "text": "yes"}])
    both = memory.add("u", [{"role": "user", "text": "ok"}, {"role": "user", "text": "ok"}])
    assert (first.accepted, second.accepted, second.duplicates) == (1, 1, 0)
    assert (both.accepted, both.duplicates) == (2, 0)
    texts = [t["text"] for t in frame(memory.rt.store, "raw_turns", "u").to_pylist()]
    assert sorted(texts) == ["ok", "ok", "yes", "yes"]
    # with an id, a retry is a duplicate and other text under it is a conflict
    ident = {"role": "user", "text": "yes", "id": "m7"}
    assert memory.add("u", [ident]).accepted == 1
    assert memory.add("u", [ident]).duplicates == 1
    clash = memory.add("u", [{**ident, "text": "no"}, {**ident, "id": "m8", "text": "a"},
                             {**ident, "id": "m8", "text": "b"}])  # fmt: skip
    assert clash.accepted == 1 and clash.duplicates == 0
    assert [r.index for r in clash.rejected] == [0, 2]
    assert all("conflict" in r.reason for r in clash.rejected)


def test_the_id_field_names_a_record_in_files_and_over_the_api(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    rec = {"role": "user", "text": "I moved to Berlin", "ts": "2025-06-01T10:00:00Z",
           "stream_id": "chat-1", "id": "m1"}  # fmt: skip
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text(json.dumps(rec) + "\n", encoding="utf-8")
        memory.ingest(tmp_path / name, "jsonl", user_id="alice")
    receipt = memory.add("alice", [rec])
    assert receipt.duplicates == 1
    assert frame(memory.rt.store, "raw_turns", "alice").num_rows == 1


def test_an_undecodable_line_is_quarantined_under_its_user(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "user", "text": "fine"}\nnot json at all\n', encoding="utf-8")
    report = memory.ingest(path, "jsonl", user_id="carol", stream_id="s9")
    assert (report.accepted, report.rejected) == (1, 1)
    rows = _rejected(memory, "carol")
    assert [(r["line_no"], r["stream_id"]) for r in rows] == [(2, "s9")]
    assert frame(memory.rt.store, "rejected_input", "").num_rows == 0
