"""The ChatGPT data export: the path to current_node only, one stream per
conversation, hidden and empty messages skipped, detected by `auto`."""

from __future__ import annotations

import json
from pathlib import Path

from episodic.ingest import parse_with_stats
from episodic.ingest.chatgpt import path_to_current
from episodic.models import Rejected, TurnIn

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ingest" / "chatgpt_conversations.json"


def test_export_reads_the_current_branch() -> None:
    stats, items = parse_with_stats(FIXTURE, "auto")
    turns = [t for t in items if isinstance(t, TurnIn)]
    assert stats.format == "chatgpt"
    assert not [r for r in items if isinstance(r, Rejected)]
    by_stream = {s: [t for t in turns if t.stream_id == s] for s in ("conv-1", "conv-2")}
    assert [t.native_id for t in by_stream["conv-1"]] == ["m1", "m2", "m3", "m4b"]
    assert "regenerated" not in " ".join(t.text for t in turns)
    assert by_stream["conv-1"][2].text == "[image_asset_pointer]\n\nWhat is this tram in my photo?"
    assert [t.role for t in by_stream["conv-2"]] == ["user", "assistant", "tool"]
    assert by_stream["conv-2"][1].text == "print(2+2)"
    assert by_stream["conv-1"][0].event_ts.timestamp() == 1717236001.0
    assert stats.skipped_other == 1  # the hidden system prompt


def test_same_export_twice_gives_the_same_ids(tmp_path: Path) -> None:
    copy = tmp_path / "conversations.json"
    copy.write_bytes(FIXTURE.read_bytes())
    ids = [
        {t.turn_id for t in parse_with_stats(p, "chatgpt")[1] if isinstance(t, TurnIn)}
        for p in (FIXTURE, copy)
    ]
    assert ids[0] == ids[1] and len(ids[0]) == 7


def test_broken_trees_are_rejected_not_raised(tmp_path: Path) -> None:
    cyc = {"a": {"id": "a", "parent": "b", "children": []}, "b": {"id": "b", "parent": "a"}}
    assert path_to_current(cyc, "a")[1] == "the mapping has a cycle"
    bad = tmp_path / "conversations.json"
    bad.write_text(json.dumps([{"mapping": cyc, "current_node": "a"}, {"title": "x"}]))
    _, items = parse_with_stats(bad, "chatgpt")
    reasons = [r.reason for r in items if isinstance(r, Rejected)]
    assert reasons == [
        "conversation 0: the mapping has a cycle",
        "conversation 1: not a conversation with a mapping",
    ]
