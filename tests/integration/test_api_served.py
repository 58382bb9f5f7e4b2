"""The real `episodic api` process on 127.0.0.1 (a free port, its own home):
what only a served API shows. The routes themselves are tested in process
(test_api.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from episodic.service.memory import Memory
from tests.integration.api_support import api_server, run_cli
from tests.integration.helpers import synthetic_stream

pytestmark = pytest.mark.slow


def _turns(user: str) -> list[dict[str, object]]:
    turns = synthetic_stream(user=user, stream="s1", gap_minutes=45)
    for t in turns:
        t.pop("user_id")
    return turns


def test_served_api_writes_reads_limits_and_stops_cleanly(tmp_path: Path) -> None:
    """Turns in, search out, auth, the body limit on uvicorn (declared and
    chunked) and a graceful stop on SIGTERM."""
    big = json.dumps({"turns": [{"role": "user", "text": "x" * 100_000}] * 90}).encode()

    def chunks() -> Iterator[bytes]:  # chunked transfer: no content-length
        for i in range(0, len(big), 1 << 20):
            yield big[i : i + (1 << 20)]

    with api_server(tmp_path / "home") as srv:
        key = srv.key("served-user")
        with srv.client() as c:
            assert c.get("/healthz").json() == {"status": "ok", "version": "v1"}
            assert "/v1/search" in c.get("/openapi.json").json()["paths"]
            assert c.get("/v1/status").status_code == 401
        with srv.client(key) as c:
            posted = c.post("/v1/turns", json={"turns": _turns("served-user")}).json()
            hits = c.get("/v1/search", params={"q": "helm staging deploy", "k": 3}).json()
            status = c.get("/v1/status").json()
            declared = c.post("/v1/turns", content=big)
            chunked = c.post("/v1/turns", content=chunks())
            after = c.get("/v1/status").json()
    assert posted["accepted"] == 24 and posted["duplicates"] == 0
    assert 0 < len(hits) <= 3 and "helm" in hits[0]["text"]
    assert status[0]["raw_turns"] == 24 and after[0]["raw_turns"] == 24
    for r in (declared, chunked):
        assert r.status_code == 413 and "body over" in r.json()["detail"], r.text
    log = (tmp_path / "home" / "api.log").read_text()
    assert "Traceback" not in log, log


def test_served_consolidate_revoke_and_recalls_kept_at_stop(tmp_path: Path) -> None:
    """POST /v1/consolidate runs the flow in the server process (no
    PREFECT_API_URL); a key revoked by `episodic keys revoke`, another
    process, is refused within the cache's 2 s; a search's recalls are
    written when the server is stopped (SIGTERM) right after it."""
    home = tmp_path / "home"
    with api_server(home) as srv:
        key = srv.key("alice")
        with srv.client(key) as c:
            assert c.post("/v1/turns", json={"turns": _turns("alice")}).json()["accepted"] == 24
            run = c.post("/v1/consolidate")
            eps = c.get("/v1/episodes").json()
        assert run.status_code == 200, run.text
        assert run.json()["mode"] == "local" and run.json()["summary"]["users"] == ["alice"]
        assert len(eps) >= 2
        key_id = key.split("_")[1]
        done = run_cli(srv.home, "keys", "revoke", key_id, "--json")
        assert json.loads(done.stdout) == {"key_id": key_id, "revoked": True}, done.stderr
        time.sleep(2.5)  # the verified-key cache holds a key for 2 s
        with srv.client(key) as c:
            assert c.get("/v1/status").status_code == 401
        with srv.client(srv.key("alice")) as c:
            hits = c.get("/v1/search", params={"q": "helm staging deploy", "k": 5}).json()
        # stopped at once: the recall log's writer (every 1 s) has not run yet
    recalled = {h["episode_id"] for h in hits if h["kind"] == "turn" and h["episode_id"]}
    assert recalled
    with Memory.at(home) as memory:
        got = memory.rt.episodes.by_ids("alice", sorted(recalled))
    assert {e.episode_id for e in got if e.recall_count == 1 and e.last_recalled_at} == recalled


def test_keys_create_json_prints_the_key_once(tmp_path: Path) -> None:
    out = run_cli(tmp_path, "keys", "create", "--user", "U", "--json")
    assert out.returncode == 0, out.stderr
    created = json.loads(out.stdout)
    assert created["key"].startswith("ep_") and created["user_id"] == "U"
    listed = run_cli(tmp_path, "keys", "list", "--json")
    assert created["key"] not in listed.stdout and created["key_id"] in listed.stdout
    raw = b"".join(p.read_bytes() for p in (tmp_path / "lancedb").rglob("*") if p.is_file())
    assert created["key"].split("_", 2)[2].encode() not in raw  # only the salted HMAC is stored
