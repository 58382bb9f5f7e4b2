"""A person corrects a fact (issue 30): invalidated, it stops being believed
but is kept, with a DELETE by `user-correction` in its history; restored, it
is active again with an ADD; doctor accepts both states."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.cli_support import cli, cli_home, refused
from tests.integration.helpers import held_elsewhere, make_memory

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_invalidate_then_restore_a_fact(tmp_path: Path) -> None:
    memory = make_memory(tmp_path)
    memory.add("u", [{"role": "user", "text": "I live in Paris.", "ts": "2025-03-02T09:00:00Z"}])
    memory.consolidate("u", flush=True)
    (fact,) = memory.facts("u")
    gone = memory.invalidate_fact("u", fact.fact_id[:10])
    assert gone.status == "deleted" and gone.valid_to is not None
    assert memory.facts("u") == []
    assert [f.fact_id for f in memory.facts("u", include_inactive=True)] == [fact.fact_id]
    assert memory.doctor("u").ok
    back = memory.restore_fact("u", fact.fact_id)
    assert back.status == "active" and back.valid_to is None
    events = [(h.event, h.decided_by) for h in memory.fact_history("u", fact.fact_id)]
    assert events[-2:] == [("DELETE", "user-correction:user"), ("ADD", "user-correction:user")]
    assert memory.doctor("u").ok
    assert memory.restore_fact("u", fact.fact_id) == back  # already active: nothing new
    assert len(memory.fact_history("u", fact.fact_id)) == len(events)


def test_reword_a_fact_recorded_wrong(tmp_path: Path) -> None:
    memory = make_memory(tmp_path)
    memory.add("u", [{"role": "user", "text": "I live in Paris.", "ts": "2025-03-02T09:00:00Z"}])
    memory.consolidate("u", flush=True)
    (old,) = memory.facts("u")
    new = memory.reword_fact("u", old.fact_id[:10], "  User lives in\nLyon ")
    # a new active fact, for the same time and episodes, superseding the old one
    assert (new.text, new.status, new.supersedes) == ("User lives in Lyon", "active", old.fact_id)
    assert new.valid_from == old.valid_from and new.source_episode_ids == old.source_episode_ids
    assert [f.fact_id for f in memory.facts("u")] == [new.fact_id]
    # recorded wrong: the old wording is believed at no time, and is kept in the history
    (was,) = [f for f in memory.facts("u", include_inactive=True) if f.fact_id == old.fact_id]
    assert was.status == "superseded"
    assert [f.text for f in memory.facts("u", as_of=old.valid_from)] == ["User lives in Lyon"]
    last = memory.fact_history("u", old.fact_id)[-1]
    assert (last.event, last.old_text, last.new_text, last.new_fact_id, last.decided_by) == (
        "UPDATE", old.text, "User lives in Lyon", new.fact_id, "user-correction:user",
    )  # fmt: skip
    assert memory.doctor("u").ok
    # found by meaning and words under its new wording
    hits = memory.search("u", "which city is the user in", k=3, record=False)
    assert hits[0].item_id == new.fact_id and hits[0].text == "User lives in Lyon"
    # the same fix again changes nothing; an empty one or one of a closed fact is refused
    n = len(memory.fact_history("u", old.fact_id))
    assert memory.reword_fact("u", old.fact_id, "User lives in Lyon") == new
    assert len(memory.fact_history("u", old.fact_id)) == n
    with pytest.raises(ValueError, match="empty"):
        memory.reword_fact("u", new.fact_id, " \n ")
    with pytest.raises(ValueError, match=f"superseded: fact {new.fact_id} .*replaced it"):
        memory.reword_fact("u", old.fact_id, "User lives in Nice")
    assert memory.reword_fact("u", new.fact_id, new.text) == new  # unchanged: no new row
    assert len(memory.facts("u", include_inactive=True)) == 2


def test_the_command_line_corrects_a_fact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = cli_home(monkeypatch, tmp_path / "home")
    memory.add("u", [{"role": "user", "text": "I live in Paris.", "ts": "2025-03-02T09:00:00Z"}])
    memory.consolidate("u", flush=True)
    (old,) = memory.facts("u")
    new = cli("reword", old.fact_id[:8], "User lives in Lyon", "--user", "u", "--json")
    assert (new["text"], new["supersedes"], new["status"]) == (
        "User lives in Lyon", old.fact_id, "active",
    )  # fmt: skip
    assert [f.fact_id for f in memory.facts("u")] == [new["fact_id"]]
    assert refused("reword", new["fact_id"], "  ", "--user", "u", code=2) == (
        "error: the fact's new text is empty"
    )
    for verb in ("invalidate", "restore"):  # the old wording: superseded, not undone
        said = refused(verb, old.fact_id, "--user", "u", code=2)
        assert said.startswith(f"error: fact {old.fact_id} is superseded"), said
    assert cli("invalidate", new["fact_id"], "--user", "u", "--json")["status"] == "deleted"
    assert cli("restore", new["fact_id"][:8], "--user", "u", "--json")["status"] == "active"
    events = [(h.event, h.decided_by) for h in memory.fact_history("u", new["fact_id"])]
    assert events[-3:] == [
        ("UPDATE", "user-correction:cli"),
        ("DELETE", "user-correction:cli"),
        ("ADD", "user-correction:cli"),
    ]


def test_a_correction_waits_for_a_merge_of_the_users_facts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merge holds the user's facts from its read to its write (a reword in
    between left two active facts). Held by a thread of this process or by
    another process (the facts lease), a correction waits, then is refused as
    busy with nothing changed, over HTTP as a 409; released, it applies."""
    import anyio
    import httpx

    from episodic.adapters.client import AsyncClient
    from episodic.adapters.http.app import create_app
    from episodic.errors import BusyError
    from episodic.service import memory as service
    from storage.lease import user_lease
    from tests.integration.api_support import new_key

    memory = make_memory(tmp_path)
    memory.add("u", [{"role": "user", "text": "I live in Paris.", "ts": "2025-03-02T09:00:00Z"}])
    memory.consolidate("u", flush=True)
    (fact,) = memory.facts("u")
    key = new_key(memory, "u")
    monkeypatch.setattr(service, "CORRECTION_WAIT_S", 0.3)

    def over_http() -> None:
        async def run() -> None:
            transport = httpx.ASGITransport(app=create_app(memory))
            async with (
                httpx.AsyncClient(transport=transport, base_url="http://app") as http,
                AsyncClient(key=key, http=http) as c,
            ):
                got = await http.post(
                    f"/v1/facts/{fact.fact_id}/invalidate",
                    headers={"Authorization": f"Bearer {key}"},
                )
                assert got.status_code == 409 and "holds user" in got.json()["detail"]
                with pytest.raises(BusyError):
                    await c.reword_fact("u", fact.fact_id, "User lives in Lyon")

        anyio.run(run)

    holders = {
        "a merge in this process": lambda: memory.rt.facts_held("u"),
        "another process": lambda: user_lease(memory.rt.store.uri, "u", scope="facts"),
    }
    for who, hold in holders.items():
        with held_elsewhere(hold):
            with pytest.raises(BusyError):
                memory.reword_fact("u", fact.fact_id, "User lives in Lyon")
            with pytest.raises(BusyError):
                memory.invalidate_fact("u", fact.fact_id)
            over_http()
            assert [f.fact_id for f in memory.facts("u")] == [fact.fact_id], who  # nothing done
    new = memory.reword_fact("u", fact.fact_id, "User lives in Lyon")
    assert [f.text for f in memory.facts("u")] == [new.text] == ["User lives in Lyon"]


def test_a_reworded_fact_leaves_its_turns_ranked_as_true(tmp_path: Path) -> None:
    """A reword fixes how a fact was recorded, not what was true: the turn it
    came from is not demoted as stating a superseded value, and on a tie the
    fact leads (tests/unit/test_hit_ties.py: the hash embedder here ranks
    the turn's words above the fact's)."""
    memory = make_memory(tmp_path)
    said = {"role": "user", "text": "I moved to Berlin", "ts": "2025-06-01T10:00:00Z"}
    memory.add("u", [said, {**said, "text": "I work at Acme", "ts": "2025-06-01T10:01:00Z"}])
    memory.consolidate("u", flush=True)
    (old,) = [f for f in memory.facts("u") if "Berlin" in f.text]

    def turn_score() -> float:
        hits = memory.search("u", "where does the user live", k=5, record=False)
        return next(h.score for h in hits if h.text == said["text"])

    before = turn_score()
    memory.reword_fact("u", old.fact_id, "User lives in Berlin")
    assert turn_score() == before


def test_forgetting_a_reworded_fact_takes_the_wordings_it_replaced(tmp_path: Path) -> None:
    """A reword records one fact again, so forgetting the fact leaves none of
    its wordings; the value it replaced when the user moved is another fact,
    and stays in the history."""
    memory = make_memory(tmp_path)
    memory.add("u", [{"role": "user", "text": "I live in Paris.", "ts": "2025-03-02T09:00:00Z"}])
    memory.consolidate("u", flush=True)
    memory.add("u", [{"role": "user", "text": "I moved to Lyon.", "ts": "2025-03-20T09:00:00Z"}])
    memory.consolidate("u", flush=True)
    (paris,) = [f for f in memory.facts("u", include_inactive=True) if "Paris" in f.text]
    (lyon,) = memory.facts("u")
    assert (paris.status, lyon.supersedes) == ("superseded", paris.fact_id)
    typo = memory.reword_fact("u", lyon.fact_id, "User lives in Lyoon")
    fixed = memory.reword_fact("u", typo.fact_id, "User lives in Lyon, France")
    # the newest wording's history is the whole chain: the rule's first ADD of
    # Paris, the move's UPDATE, and both rewordings
    events = [
        (h.event, h.decided_by.split(":")[0]) for h in memory.fact_history("u", fixed.fact_id)
    ]
    assert events[0][0] == "ADD" and events.count(("UPDATE", "user-correction")) == 2
    assert len(events) == len(memory.fact_history("u", paris.fact_id)) >= 4
    receipt = memory.forget("u", fact=fixed.fact_id)
    assert receipt.counts["facts"] == 3
    left = memory.facts("u", include_inactive=True)
    assert [f.fact_id for f in left] == [paris.fact_id]
    assert left[0].status == "superseded" and memory.facts("u") == []  # Paris not believed
    assert not [h for h in memory.fact_history("u", paris.fact_id) if "Lyo" in (h.new_text or "")]
    assert memory.doctor("u").ok
