"""User values that lancedb's SQL rendering got wrong reach their own rows
only: a quote after a backslash ended the literal (`x\\') OR 1=1 --` matched
every row), and a doubled quote was taken as escaped (`o''neil` matched
`o'neil`). Each path that lowered a condition to SQL text is driven here:
counts, dataset reads and scans, updates, deletes and the forget built on
them, and an id in an HTTP path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from episodic.errors import NotFoundError
from episodic.service.memory import Memory
from storage import filters
from tests.integration.api_support import api_client, new_key
from tests.integration.helpers import make_memory

pytestmark = pytest.mark.usefixtures("prefect_harness")

LOOKALIKES = ["o'neil", "o''neil", "x\\'y", "x\\\\'y"]
USERS = ["bob", *LOOKALIKES]
ENDS_THE_LITERAL = "x\\') OR 1=1 --"


def _turns(user: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "text": f"my passphrase is {i} for {user}", "ts": f"2025-04-0{i}T10:00Z"}
        for i in range(1, 4)
    ]


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    m = make_memory(tmp_path / "home")
    for user in USERS:
        assert m.add(user, _turns(user), stream_id="s").accepted == 3
    m.consolidate(flush=True)
    return m


def test_each_lookalike_id_counts_reads_and_searches_its_own_rows(memory: Memory) -> None:
    store = memory.rt.store
    for user in USERS:
        assert store.count("raw_turns", filters.user(user)) == 3, user
        rows = store.read("raw_turns", filters.user(user), ["user_id"])
        assert {r["user_id"] for r in rows} == {user}
        assert [s.user_id for s in memory.status(user)] == [user]
        hits = memory.search(user, "passphrase", kinds=["turns"], record=False)
        assert hits and all(h.text.endswith(f"for {user}") for h in hits), user
    assert store.count("raw_turns", filters.user(ENDS_THE_LITERAL)) == 0
    assert store.count("raw_turns") == 3 * len(USERS)


def test_an_update_and_a_delete_touch_the_matching_rows_only(memory: Memory) -> None:
    store = memory.rt.store
    before = store.count("episodes", filters.eq("status", "closed"))
    assert store.update_where("episodes", filters.user(ENDS_THE_LITERAL), {"status": "x"}) == 0
    n = store.update_where("episodes", filters.user("o''neil"), {"status": "x"})
    assert n == store.count("episodes", filters.eq("status", "x")) > 0
    assert store.count("episodes", filters.user("o''neil") & filters.eq("status", "x")) == n
    assert store.count("episodes", filters.eq("status", "closed")) == before - n
    assert store.delete("raw_turns", filters.user(ENDS_THE_LITERAL)) == 0
    assert store.delete("raw_turns", filters.user("x\\'y")) == 3
    assert {u: store.count("raw_turns", filters.user(u)) for u in USERS} == {
        u: 0 if u == "x\\'y" else 3 for u in USERS
    }


def test_forgetting_an_injected_or_lookalike_user_erases_that_user_only(memory: Memory) -> None:
    store = memory.rt.store
    memory.create_key(ENDS_THE_LITERAL)  # known by its key alone
    bob_key = new_key(memory, "bob")
    memory.forget(ENDS_THE_LITERAL)
    memory.forget("o''neil")
    left = {u: store.count("raw_turns", filters.user(u)) for u in USERS}
    assert left == {u: 0 if u == "o''neil" else 3 for u in USERS}
    assert memory.verify_key(bob_key) is not None
    assert memory.episodes("o'neil") and memory.keys.list("bob")


def test_an_id_in_a_path_that_ends_the_literal_answers_404(memory: Memory) -> None:
    bob_episode = memory.episodes("bob")[0].episode_id
    injected = "x\\')) OR user_id = 'bob' --"
    with pytest.raises(NotFoundError):
        memory.episode("o'neil", injected)
    with api_client(memory, new_key(memory, "o'neil")) as c:
        for path in (f"/v1/episodes/{injected}", f"/v1/episodes/{bob_episode}"):
            got = c.get(path)
            assert got.status_code == 404, (path, got.text)
            assert "passphrase" not in got.text
        gone = c.delete(f"/v1/turns/{injected}")
        assert gone.status_code == 404, gone.text
    assert memory.rt.store.count("raw_turns", filters.user("bob")) == 3
