"""Forgetting and correcting through the faces (issue 30): the HTTP routes
(DELETE /v1/memory, /v1/turns|episodes|facts/{id}; POST
/v1/facts/{id}/invalidate|restore) answer `Memory`'s receipts and views,
need the write scope, and treat another user's id as a missing one; the
`episodic forget` command asks first, prints the receipt, and a repeat is a
no-op with the same receipt shape. What forgetting erases is
test_forget.py's."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from episodic.adapters.client import Client
from episodic.adapters.embedded import Memory
from storage.forget import audit_rows
from tests.integration.api_support import api_client, new_key
from tests.integration.cli_support import cli, cli_home, invoke, refused
from tests.integration.helpers import held_elsewhere, make_memory

pytestmark = pytest.mark.usefixtures("prefect_harness")


def turns(tag: str) -> list[dict[str, Any]]:
    """A few days of first-person statements: episodes, facts (one superseded)."""
    said = [
        ("I live in Paris and I have a dog named Rex.", "2025-03-01T09:00:00Z"),
        ("Noted: Paris, and Rex.", "2025-03-01T09:00:05Z"),
        ("We use Postgres 16 for the session store.", "2025-03-03T09:00:00Z"),
        ("Got it, Postgres 16.", "2025-03-03T09:00:05Z"),
        ("I moved to Berlin over the weekend.", "2025-03-09T09:00:00Z"),
        ("Noted: you live in Berlin now.", "2025-03-09T09:00:05Z"),
    ]
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "text": text, "ts": ts,
         "id": f"{tag}-{i}", "stream_id": "chat"}
        for i, (text, ts) in enumerate(said)
    ]  # fmt: skip


def consolidated(memory: Memory, *users: str) -> Memory:
    for user in users:
        memory.add(user, turns(user))
    memory.consolidate(flush=True)
    return memory


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    return consolidated(make_memory(tmp_path / "home"), "alice", "bob")


def test_http_forget_and_correct_answer_the_memory_views(memory: Memory) -> None:
    fact = memory.facts("alice")[0]
    episode = memory.episodes("alice")[0]
    turn = memory.episode("alice", episode.episode_id).turns[0]
    bob_fact = memory.facts("bob")[0]
    bob_turn = memory.episode("bob", memory.episodes("bob")[0].episode_id).turns[0].turn_id
    key = new_key(memory, "alice")
    found = memory.verify_key(key)
    assert found is not None
    key_id = found.key_id
    with api_client(memory, key) as c:
        # a correction: kept, reversible, the same view Memory returns
        r = c.post(f"/v1/facts/{fact.fact_id}/invalidate")
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "deleted"
        assert (
            r.json()
            == memory.facts("alice", include_inactive=True)[
                [f.fact_id for f in memory.facts("alice", include_inactive=True)].index(
                    fact.fact_id
                )
            ].as_json()
        )
        history = memory.fact_history("alice", fact.fact_id)
        assert history[-1].event == "DELETE"
        assert history[-1].decided_by == f"user-correction:api:{key_id}"
        r = c.post(f"/v1/facts/{fact.fact_id}/restore")
        assert r.json()["status"] == "active"
        assert fact.fact_id in {f.fact_id for f in memory.facts("alice")}
        # another user's ids answer 404 exactly as missing ones, and change nothing
        for method, path in (
            ("DELETE", f"/v1/facts/{bob_fact.fact_id}"),
            ("POST", f"/v1/facts/{bob_fact.fact_id}/invalidate"),
            ("DELETE", f"/v1/episodes/{memory.episodes('bob')[0].episode_id}"),
            ("DELETE", f"/v1/turns/{bob_turn}"),
            ("DELETE", "/v1/facts/no-such-fact"),
            ("DELETE", "/v1/turns/no-such-turn"),
        ):
            r = c.request(method, path)
            assert r.status_code == 404, (path, r.text)
            assert r.json() == {"detail": f"no such {path.split('/')[2][:-1]}"}
        assert [f.as_json() for f in memory.facts("bob")][0] == bob_fact.as_json()
        # forget one fact: gone, and a repeat is a 404
        r = c.delete(f"/v1/facts/{fact.fact_id}")
        assert r.status_code == 200 and r.json()["kind"] == "fact"
        assert fact.fact_id not in {f.fact_id for f in memory.facts("alice", include_inactive=True)}
        assert c.delete(f"/v1/facts/{fact.fact_id}").status_code == 404
        # forget one turn: the receipt, also the audit row
        r = c.delete(f"/v1/turns/{turn.turn_id}")
        assert r.status_code == 200, r.text
        receipt = r.json()
        assert receipt["kind"] == "turn" and receipt["actor"].startswith("api:")
        assert receipt["audit_id"] in {a["audit_id"] for a in audit_rows(memory.rt.store)}
        assert memory.rt.raw.by_ids("alice", [turn.turn_id])[0].text == "[forgotten]"
        # forget an episode
        episode = memory.episodes("alice")[-1]
        r = c.delete(f"/v1/episodes/{episode.episode_id}")
        assert r.status_code == 200 and r.json()["kind"] == "episode"
        # forget the user: every row, this key too
        r = c.delete("/v1/memory")
        assert r.status_code == 200 and r.json()["kind"] == "user"
        assert r.json()["counts"]["api_keys"] == 1
        time.sleep(2.1)  # the key cache's 2 s, as for a revoked key
        assert c.get("/v1/facts").status_code == 401
    assert memory.facts("alice", include_inactive=True) == []
    assert memory.status("alice") == []
    assert memory.facts("bob")[0].as_json() == bob_fact.as_json()


def test_http_forget_needs_the_write_scope(memory: Memory) -> None:
    fact = memory.facts("alice")[0]
    turn = memory.episode("alice", memory.episodes("alice")[0].episode_id).turns[0]
    with api_client(memory, new_key(memory, "alice", ("read",))) as c:
        for method, path in (
            ("DELETE", "/v1/memory"),
            ("DELETE", f"/v1/facts/{fact.fact_id}"),
            ("DELETE", f"/v1/turns/{turn.turn_id}"),
            ("POST", f"/v1/facts/{fact.fact_id}/invalidate"),
        ):
            assert c.request(method, path).status_code == 403, path
    with api_client(memory) as c:
        assert c.delete("/v1/memory").status_code == 401
    assert memory.facts("alice")[0] == fact


def test_cli_forget_asks_then_prints_the_receipt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = consolidated(cli_home(monkeypatch, tmp_path / "home"), "alice", "bob")
    fact = memory.facts("alice")[0]
    # asked, and no: nothing forgotten, exit 1
    res = invoke("forget", "--user", "alice", "--fact", fact.fact_id[:10], stdin="n\n")
    assert res.exit_code == 1 and "This erases" in res.stdout and "nothing forgotten" in res.stdout
    assert fact in memory.facts("alice")
    # asked, and yes: the receipt as a table
    res = invoke("forget", "--user", "alice", "--fact", fact.fact_id[:10], stdin="y\n")
    assert res.exit_code == 0, res.stdout + res.stderr
    assert "forgot fact" in res.stdout and "facts" in res.stdout
    assert fact.fact_id not in {f.fact_id for f in memory.facts("alice", include_inactive=True)}
    # --json asks nothing; a turn; the receipt is the audit row
    turn = memory.episode("alice", memory.episodes("alice")[0].episode_id).turns[0]
    shown = invoke("episode", memory.episodes("alice")[0].episode_id, "--user", "alice").stdout
    assert turn.turn_id[:12] in shown  # the short id a person copies from `episode`
    got = cli("forget", "--user", "alice", "--turn", turn.turn_id[:12], "--json")
    assert got["kind"] == "turn" and got["actor"] == "cli" and sum(got["counts"].values()) > 0
    assert got["audit_id"] in {a["audit_id"] for a in audit_rows(memory.rt.store)}
    facts_left = len(memory.facts("alice"))
    # two targets at once: a usage error
    res = invoke("forget", "--user", "alice", "--turn", "a", "--fact", "b", "--yes")
    assert res.exit_code == 2 and "one turn, episode or fact at a time" in res.stderr
    # an empty id (an unset shell variable) is not the whole user, on any face
    for option in ("--turn", "--episode", "--fact"):
        line = refused("forget", "--user", "alice", option, "", "--json", code=2)
        assert line.endswith("id to forget is empty"), line
    for target in ("turn", "episode", "fact"):
        with pytest.raises(ValueError, match="empty"):
            memory.forget("alice", **{target: " "})
    assert refused("forget", "--user", " ", "--yes", code=2).endswith("user id to forget is empty")
    with pytest.raises(ValueError, match="empty"):
        memory.forget("")
    with Client("http://127.0.0.1:9", key="not sent: refused before") as c:
        with pytest.raises(ValueError, match="empty"):
            c.forget("alice", fact="")
    assert len(memory.facts("alice")) == facts_left
    # a missing fact: exit 1, one line
    res = invoke("forget", "--user", "alice", "--fact", "nosuchfact", "--yes")
    assert res.exit_code == 1 and res.stderr.startswith("error: no fact")
    # the whole user, then again: a no-op with the same receipt shape
    first = cli("forget", "--user", "alice", "--yes", "--json")
    again = cli("forget", "--user", "alice", "--yes", "--json")
    assert first["kind"] == again["kind"] == "user"
    assert first["counts"]["raw_turns"] == 6 and set(first) == set(again)
    assert set(first["counts"]) == set(again["counts"]) and sum(again["counts"].values()) == 0
    assert memory.facts("alice", include_inactive=True) == []
    assert len(memory.facts("bob")) > 0


def test_a_forget_waits_for_a_run_holding_the_user_then_says_busy(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A consolidation holds the user's lease for its whole run. A forget
    waits for it, but not for as long as the run may take: past the wait it
    changes nothing and says so (HTTP 409, not a request that hangs for ten
    minutes); released, it goes through."""
    from episodic.errors import BusyError
    from episodic.service import memory as service
    from storage.lease import user_lease

    monkeypatch.setattr(service, "CORRECTION_WAIT_S", 0.3)
    fact = memory.facts("alice")[0]
    before = sorted(f.fact_id for f in memory.facts("alice", include_inactive=True))
    audits = len(audit_rows(memory.rt.store))
    with held_elsewhere(lambda: user_lease(memory.rt.store.uri, "alice")):
        with pytest.raises(BusyError):
            memory.forget("alice", fact=fact.fact_id)
        with api_client(memory, new_key(memory, "alice")) as c:
            for path in (f"/v1/facts/{fact.fact_id}", "/v1/memory"):
                r = c.delete(path)
                assert r.status_code == 409, (path, r.text)
                assert "holds user" in r.json()["detail"]
        # bob is not held: his forget goes on
        assert memory.forget("bob", fact=memory.facts("bob")[0].fact_id).kind == "fact"
    assert sorted(f.fact_id for f in memory.facts("alice", include_inactive=True)) == before
    assert len(audit_rows(memory.rt.store)) == audits + 1  # bob's only
    assert memory.forget("alice", fact=fact.fact_id).counts["facts"] == 1
