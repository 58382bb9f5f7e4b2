"""A write is acknowledged with an ingest id, a retry with the same
Idempotency-Key gets the first answer and writes nothing, the id says what
became of the turns, new turns are found by search before consolidation, and
a server with an autopilot consolidates a user shortly after their writes
(issue 29, items 1 and 5)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from episodic.adapters.autopilot import Autopilot
from episodic.adapters.http.app import create_app
from episodic.adapters.http.limits import BodyLimit
from episodic.adapters.runners import run_flow
from episodic.errors import KeyReusedError
from episodic.service.memory import Memory
from storage.frames import frame
from tests.integration.api_support import api_client, new_key
from tests.integration.helpers import make_memory, settings_at

pytestmark = pytest.mark.usefixtures("prefect_harness")


def _batch(tag: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "text": f"I moved to {tag}ville last week.", "ts": "2025-03-01T10:00:00Z"},
        {"role": "assistant", "text": f"Noted: {tag}ville.", "ts": "2025-03-01T10:00:04Z"},
    ]


def test_idempotency_key_and_ingest_status(tmp_path: Path) -> None:
    memory = make_memory(tmp_path)
    key = new_key(memory, "u")
    with api_client(memory, key) as c:
        first = c.post(
            "/v1/turns", json={"turns": _batch("paris")}, headers={"Idempotency-Key": "k1"}
        )
        retry = c.post(
            "/v1/turns", json={"turns": _batch("paris")}, headers={"Idempotency-Key": "k1"}
        )
        assert first.status_code == retry.status_code == 200
        assert retry.json() == first.json()  # the first answer, not "2 duplicates"
        assert first.json()["accepted"] == 2
        # the key again with other turns: refused, nothing written (the first
        # answer would have hidden that these turns were never stored)
        reused = c.post(
            "/v1/turns", json={"turns": _batch("rome")}, headers={"Idempotency-Key": "k1"}
        )
        assert reused.status_code == 422 and "other turns" in reused.json()["detail"]
        ingest_id = first.json()["ingest_id"]
        queued = c.get(f"/v1/ingests/{ingest_id}").json()
        assert (queued["state"], queued["turns"], queued["episodes"]) == ("queued", 2, [])
        # found by search before any consolidation (lexically)
        hits = c.get("/v1/search", params={"q": "parisville"}).json()
        assert any("parisville" in h["text"] for h in hits)
        done = c.post("/v1/consolidate", params={"flush": True})
        assert done.status_code == 200, done.text
        status = c.get(f"/v1/ingests/{ingest_id}").json()
        assert status["state"] == "consolidated" and len(status["episodes"]) == 1
        assert status["facts"], status
        other = new_key(memory, "someone-else")
        missing = c.get(f"/v1/ingests/{ingest_id}", headers={"Authorization": f"Bearer {other}"})
        assert missing.status_code == 404
    assert frame(memory.rt.store, "raw_turns", "u").num_rows == 2
    with pytest.raises(KeyReusedError):  # the same from Python, on a fresh service
        Memory(memory.rt).add("u", _batch("rome"), idempotency_key="k1")


@pytest.mark.parametrize("journal", [False, True])
def test_concurrent_retries_with_one_key_write_once(tmp_path: Path, journal: bool) -> None:
    """Retries a client sends at once (a timeout, then two more): one write,
    one answer. Without a client id every copy of a turn is a new turn, so
    only the key keeps them from being stored three times."""
    from concurrent.futures import ThreadPoolExecutor

    memory = Memory(settings_at(tmp_path), journal=journal)
    batch = [{"role": "user", "text": "race two copies check"}]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: memory.add("u", batch, idempotency_key="k"), range(16)))
    assert len({a.ingest_id for a in answers}) == 1 and answers[0].accepted == 1
    memory.settle("u")
    assert frame(memory.rt.store, "raw_turns", "u").num_rows == 1
    memory.close()


def test_the_autopilot_consolidates_after_writes(tmp_path: Path) -> None:
    memory = Memory(settings_at(tmp_path), runner=run_flow)
    pilot = Autopilot(memory, delay_s=1.0, max_wait_s=60.0, drain=False)
    key = new_key(memory, "u")
    app = BodyLimit(create_app(memory, autopilot=pilot))
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as c:
        c.post("/v1/turns", json={"turns": _batch("lisbon")})
        c.post("/v1/turns", json={"turns": _batch("porto")})
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not memory.status("u")[0].watermark >= 3:
            time.sleep(0.5)
        assert memory.status("u")[0].watermark == 3  # every turn read by one debounced run
        assert pilot.runs == 1
    memory.close()


def test_a_user_who_never_pauses_is_still_consolidated(tmp_path: Path) -> None:
    """Writes every half second, each pushing the debounced run 30 s away:
    the run comes `max_wait_s` after the first write all the same."""
    memory = Memory(settings_at(tmp_path), runner=run_flow)
    pilot = Autopilot(memory, delay_s=30.0, max_wait_s=2.0, drain=False)
    key = new_key(memory, "u")
    app = BodyLimit(create_app(memory, autopilot=pilot))
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as c:
        deadline = time.monotonic() + 90
        writes = 0
        while pilot.runs == 0 and time.monotonic() < deadline:
            c.post("/v1/turns", json={"turns": _batch(f"town{writes}")})
            writes += 1
            time.sleep(0.5)
        assert pilot.runs >= 1, f"no run after {writes} writes"
    memory.close()


def test_new_turns_are_found_by_meaning_before_consolidation(tmp_path: Path) -> None:
    """A question that shares no word with what was just written still finds
    it, with the cosine its stored vector gives once consolidated."""
    memory = make_memory(tmp_path)
    key = new_key(memory, "u")
    with api_client(memory, key) as c:
        c.post("/v1/turns", json={"turns": _batch("lisbon")})
        q = {"q": "whereabouts of residence", "kinds": "turns"}
        fresh = c.get("/v1/search", params=q).json()
        assert fresh and all(h["text_rank"] == 0 for h in fresh), fresh  # no word in common
        assert all(h["cosine"] is not None for h in fresh)
        c.post("/v1/consolidate", params={"flush": True})
        stored = c.get("/v1/search", params=q).json()
    cos = {h["item_id"]: h["cosine"] for h in stored}
    assert {h["item_id"]: h["cosine"] for h in fresh} == {
        i: cos[i] for i in (h["item_id"] for h in fresh)
    }


def test_the_last_episode_closes_once_the_user_is_idle(tmp_path: Path) -> None:
    """The run after a conversation leaves its episode open; nothing more
    is written, and one follow-up run closes it once the user is idle."""
    memory = Memory(settings_at(tmp_path, idle_minutes=10 / 60), runner=run_flow)
    idle_s = memory.settings.idle_minutes * 60
    pilot = Autopilot(memory, delay_s=1.0, max_wait_s=60.0, idle_s=idle_s, drain=False)
    key = new_key(memory, "u")
    app = BodyLimit(create_app(memory, autopilot=pilot))
    with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as c:
        c.post("/v1/turns", json={"turns": _batch("oslo")})
        # the run is done once its facts are written: its episode shows first
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not memory.facts("u"):
            time.sleep(0.5)
        [stream] = memory.status("u")
        assert (stream.episodes, stream.open_episode_turns) == (1, 0), stream
        assert [e.reason for e in memory.episodes("u")] == ["idle"]
        # the one after the write, then the idle follow-up (on a machine so
        # loaded that the first came after the idle limit, that one alone)
        assert pilot.runs in (1, 2)
        assert any("oslo" in f.text.lower() for f in memory.facts("u"))
    memory.close()
