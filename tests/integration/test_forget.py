"""Forgetting erases (issue 30): a canary planted in one user's turns is in
raw, facts, summaries, reflections, search documents and cached model
answers after consolidation, and in no file under the home after the user
(or the one turn) is forgotten, while another user's rows are unchanged; the
receipt's counts are what was removed, and a repeat is a no-op."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from episodic.adapters.embedded import Memory
from episodic.llm.cache import CachedProvider
from episodic.llm.offline import OfflineProvider
from episodic.service.plot_path import plot_paths
from flows.reflect import reflect
from storage.filters import user as user_is
from storage.forget import audit_rows, present
from tests.integration.helpers import moving_turns as _turns
from tests.integration.helpers import settings_at

pytestmark = pytest.mark.usefixtures("prefect_harness")

CANARY = "zqxcanary"  # lowercase: the text index keeps tokens lowercased


def _memory(home: Path) -> Memory:
    settings = settings_at(home)
    provider = CachedProvider(OfflineProvider(), settings.cache_dir / "llm")
    return Memory(settings, provider=provider)


def _files_with(home: Path, needle: str) -> list[str]:
    raw = needle.encode()
    hits = []
    for path in home.rglob("*"):
        if path.is_file() and raw in path.read_bytes().lower():
            hits.append(str(path.relative_to(home)))
    return sorted(hits)


def _rows(memory: Memory, user: str) -> dict[str, list[dict[str, Any]]]:
    store = memory.rt.store
    return {
        name: sorted(
            store.db.open_table(name).search().where(user_is(user).lance).limit(None).to_list(),
            key=repr,
        )
        for name in present(store)
    }


def _consolidated(home: Path) -> Memory:
    memory = _memory(home)
    memory.add("victim", _turns(CANARY))
    memory.add("other", _turns("plain"))
    memory.consolidate(flush=True)
    reflect(user="victim", force=True, memory=memory)
    memory.search("victim", f"where is {CANARY}ville")  # search documents
    memory.rt.store.ensure_indexes()  # BTree pages hold the user's id too
    memory.close()
    return memory


def test_forget_user_leaves_no_file_with_the_canary(tmp_path: Path) -> None:
    home = tmp_path / "home"
    memory = _consolidated(home)
    before = _files_with(home, CANARY)
    assert any(p.startswith("lancedb/raw_turns") for p in before), before
    assert any(p.startswith("cache/llm/users/") for p in before), before
    assert any(p.startswith("lancedb/facts") for p in before), before
    other = _rows(memory, "other")
    held = {n: len(rows) for n, rows in _rows(memory, "victim").items()}
    pictures = plot_paths(memory.settings.home, "victim")  # and the name older homes gave it
    assert "victim" not in pictures[0].name and "victim" in pictures[1].name
    for picture in pictures:
        picture.parent.mkdir(parents=True, exist_ok=True)
        picture.write_bytes(b"a timeline picture")

    receipt = memory.forget("victim", actor="test")

    assert receipt.counts["plots"] == 2 and not any(p.exists() for p in pictures)
    assert _files_with(home, CANARY) == []
    assert not [p for p in home.rglob("*") if "victim" in p.name]
    # nor the user's id: a delete's predicate names it in its version's files
    assert _files_with(home, "victim") == []
    assert _rows(memory, "other") == other
    assert {n: c for n, c in receipt.counts.items() if n in held} == held
    assert receipt.counts["llm_cache"] > 0
    assert memory.search("victim", f"{CANARY}ville") == []
    assert memory.doctor().ok
    again = memory.forget("victim", actor="test")
    assert again.kind == receipt.kind and set(again.counts) == set(receipt.counts)
    assert again.total == 0
    audit = audit_rows(memory.rt.store)
    assert [a["kind"] for a in audit] == ["user", "user"]
    assert all(CANARY not in repr(a) and "victim" not in repr(a) for a in audit)


def test_forget_one_turn_erases_it_and_rederives_its_episode(tmp_path: Path) -> None:
    home = tmp_path / "home"
    memory = _memory(home)
    turns = _turns("plain")
    turns[2]["text"] = f"By the way, my locker code is {CANARY}42."
    memory.add("u", turns)
    memory.consolidate(flush=True)
    memory.search("u", "locker code")
    memory.close()
    assert _files_with(home, CANARY)
    turn_id = memory.add("u", [turns[2]]).turn_ids[0]
    memory.rt.store.ensure_indexes()  # with its key indexed, a column update writes
    # the new column beside the old one, which stays in the fragment's first file

    receipt = memory.forget("u", turn=turn_id, actor="test")

    assert _files_with(home, CANARY) == []
    assert receipt.counts["raw_turns"] == 1 and receipt.counts["episodes"] == 1
    assert memory.doctor("u").ok
    texts = [t.text for e in memory.episodes("u") for t in memory.episode("u", e.episode_id).turns]
    assert texts.count("[forgotten]") == 1 and len(texts) == len(turns)
    again = memory.forget("u", turn=turn_id, actor="test")  # a no-op of the same shape
    assert again.total == 0 and set(again.counts) == set(receipt.counts), again.counts
    # the next consolidation scores and summarises the episode again from what is left
    (held,) = memory.rt.episodes.by_ids("u", [e.episode_id for e in memory.episodes("u")
                                              if e.summary == ""])  # fmt: skip
    assert turn_id in held.turn_ids
    memory.consolidate("u")
    (held,) = memory.rt.episodes.by_ids("u", [held.episode_id])
    assert held.summary and held.salience > 0 and CANARY not in held.summary
    assert _files_with(home, CANARY) == [] and memory.doctor("u").ok
    # a search, even one that names it, never returns the forgotten turn's place
    for q in ("locker code", "forgotten", "what did I forget"):
        assert all(h.text != "[forgotten]" for h in memory.search("u", q, k=50)), q


def test_every_table_with_a_user_column_is_in_the_forget_registry(tmp_path: Path) -> None:
    from storage.forget import AUDIT, USER_TABLES

    memory = _consolidated(tmp_path / "home")
    memory.create_key("victim")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"role": "user", "text": "hi", "ts": 1700000000}\n', encoding="utf-8")
    memory.capture(transcript, "jsonl", user_id="victim")
    db = memory.rt.store.db
    names = db.list_tables().tables
    assert {"api_keys", "capture_offsets", "raw_turns"} <= set(names)
    scoped = {n for n in names if "user_id" in db.open_table(n).schema.names}
    assert scoped - set(USER_TABLES) == set()
    assert AUDIT not in scoped


def test_forgetting_the_newest_turn_takes_it_from_the_saved_detector(tmp_path: Path) -> None:
    """A stream's checkpoint keeps its last few turns as text (the feature
    window, the open episode's recent texts): a forget of one of them
    leaves its words in no file, and the stream segments on after it."""
    home = tmp_path / "home"
    memory = _memory(home)
    turns = _turns("plain")
    turns[-1]["text"] = f"Keep this between us: the vault code is {CANARY}77."
    memory.add("u", turns)
    memory.consolidate("u")  # the episode stays open: its turns are in the checkpoint
    memory.close()
    assert any(p.startswith("lancedb/segmenter_state") for p in _files_with(home, CANARY))

    turn_id = memory.add("u", [turns[-1]]).turn_ids[0]  # stored already: its id
    receipt = memory.forget("u", turn=turn_id, actor="test")

    assert receipt.counts["segmenter_state"] == 1
    assert _files_with(home, CANARY) == []
    more = _turns("later")
    memory.add("u", [{**t, "ts": t["ts"].replace("2025-03", "2025-04")} for t in more])
    summary = memory.consolidate("u", flush=True)
    assert summary["turns_processed"] == len(more) and memory.doctor("u").ok


def test_forgetting_a_turn_keeps_what_changed_in_the_turns_left(tmp_path: Path) -> None:
    """The fact of a move came from an episode one of whose turns is
    forgotten: it is erased with that episode's facts, the value it had
    replaced is believed again, and the next consolidation finds the move in
    the turns left and supersedes it anew, so the chain holds (it was left
    superseded by nothing, and turns naming the old city read as stale)."""
    memory = _memory(tmp_path / "home")

    def said(text: str, ts: str) -> dict[str, str]:
        return {"role": "user", "text": text, "ts": ts, "stream_id": "chat"}

    memory.add("u", [said("I live in Paris.", "2025-03-01T09:00:00Z")])
    memory.consolidate("u", flush=True)
    memory.add("u", [said("I moved to Berlin over the weekend.", "2025-03-09T09:00:00Z"),
                     said("My dog Rex died last week.", "2025-03-09T09:01:00Z")])  # fmt: skip
    memory.consolidate("u", flush=True)
    (paris,) = [f for f in memory.facts("u", include_inactive=True) if "Paris" in f.text]
    (berlin,) = [f for f in memory.facts("u") if "Berlin" in f.text]
    assert (paris.status, berlin.supersedes) == ("superseded", paris.fact_id)
    rex = memory.add("u", [said("My dog Rex died last week.", "2025-03-09T09:01:00Z")])

    memory.forget("u", turn=rex.turn_ids[0])

    assert [f.fact_id for f in memory.facts("u")] == [paris.fact_id]  # believed again
    assert memory.doctor("u").ok
    memory.consolidate("u")
    (now,) = [f for f in memory.facts("u") if "Berlin" in f.text]
    assert now.supersedes == paris.fact_id and memory.doctor("u").ok
    assert not [f for f in memory.facts("u", include_inactive=True) if "Rex" in f.text]
    assert [e.event for e in memory.fact_history("u", now.fact_id)][-1] == "UPDATE"
