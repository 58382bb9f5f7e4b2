"""The HTTP API over real HTTP on 127.0.0.1: idempotent turns, auth and
scopes, JSON 4xx for bad input, and a cross-tenant matrix over every endpoint."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.api_support import Server, api_server, run_cli
from tests.integration.helpers import synthetic_stream

pytestmark = pytest.mark.slow

HOSTILE = ["' OR '1'='1", "alice%", "ALICE", "alice ", "*", "alice/../bob", "ｱlice"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with api_server(tmp_path_factory.mktemp("api-home")) as srv:
        yield srv


def _turns(user: str, n_per_topic: int = 6) -> list[dict[str, object]]:
    turns = synthetic_stream(user=user, stream="s1", n_per_topic=n_per_topic, gap_minutes=45)
    for t in turns:
        t.pop("user_id")  # the key says who; a field would be ignored anyway
    return turns


def test_post_twice_accepts_then_counts_duplicates(server: Server) -> None:
    key = server.key("dup-user")
    batch = _turns("dup-user")[:10] + [{"text": "no role"}, 7]
    with server.client(key) as c:
        first = c.post("/v1/turns", json={"turns": batch})
        second = c.post("/v1/turns", json={"turns": batch})
        status = c.get("/v1/status").json()
    assert first.status_code == 200, first.text
    assert first.json()["accepted"] == 10 and first.json()["duplicates"] == 0
    assert [r["index"] for r in first.json()["rejected"]] == [10, 11]
    assert "missing field: role" in first.json()["rejected"][0]["reason"]
    assert second.json()["accepted"] == 0 and second.json()["duplicates"] == 10
    assert sum(s["raw_turns"] for s in status) == 10
    # rejected items are quarantined under the caller's tenant, as file ingest does
    from storage.db import Store
    from storage.filters import user

    rej = Store(str(server.home / "lancedb")).table("rejected_input")
    rows = rej.search().where(user("dup-user")).limit(100).to_list()
    assert len(rows) == 2 and {r["line_no"] for r in rows} == {10, 11}


def test_client_id_makes_a_changed_retry_a_duplicate(server: Server) -> None:
    key = server.key("id-user")
    with server.client(key) as c:
        a = c.post("/v1/turns", json={"turns": [{"id": "m1", "role": "user", "text": "a"}]})
        b = c.post("/v1/turns", json={"turns": [{"id": "m1", "role": "user", "text": "a!"}]})
    assert (a.json()["accepted"], b.json()["duplicates"]) == (1, 1)


def test_auth_missing_bad_scope_and_revoked(server: Server) -> None:
    with server.client() as c:
        for path in ("/v1/status", "/v1/episodes", "/v1/facts", "/v1/reflections"):
            r = c.get(path)
            assert r.status_code == 401 and r.json() == {"detail": "missing or invalid API key"}
        r = c.post("/v1/turns", json={"turns": []}, headers={"X-API-Key": "ep_0_nope"})
        assert r.status_code == 401
    ro = server.key("ro-user", ("read",))
    with server.client(ro) as c:
        assert c.get("/v1/status").status_code == 200
        r = c.post("/v1/turns", json={"turns": [{"role": "user", "text": "x"}]})
        assert r.status_code == 403 and "write" in r.json()["detail"]
        assert c.post("/v1/consolidate").status_code == 403
    key = server.key("revoked-user")
    key_id = key.split("_")[1]
    done = run_cli(server.home, "keys", "revoke", key_id, "--json")
    assert json.loads(done.stdout) == {"key_id": key_id, "revoked": True}
    time.sleep(2.5)  # the verified-key cache holds a key for 2 s
    with server.client(key) as c:
        assert c.get("/v1/status").status_code == 401


# bodies POST /v1/turns must refuse, and GETs with a bad or missing parameter
BAD_TURNS = [
    b"not json",
    b'{"items": []}',
    b"[1, 2]",
    json.dumps({"turns": [{"role": "user", "text": "x"}] * 1001}),
]
BAD_GETS = [
    "/v1/search",
    "/v1/search?q=x&k=0",
    "/v1/search?q=x&k=abc",
    "/v1/search?q=x&kinds=bogus",
    "/v1/facts?as_of=yesterday",
    "/v1/facts?all=maybe",
    "/v1/episodes?limit=-1",
    "/v1/episodes/" + "x" * 200,
]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [("post", "/v1/turns", b) for b in BAD_TURNS] + [("get", p, None) for p in BAD_GETS],
)
def test_bad_input_answers_json_4xx(
    server: Server, method: str, path: str, body: bytes | str | None
) -> None:
    key = server.key("bad-input-user")
    with server.client(key) as c:
        r = c.request(
            method.upper(), path, content=body, headers={"content-type": "application/json"}
        )
    assert 400 <= r.status_code < 500, (r.status_code, r.text)
    assert "detail" in r.json()


def test_body_over_the_limit_is_413(server: Server) -> None:
    key = server.key("big-user")
    big = json.dumps({"turns": [{"role": "user", "text": "x" * 100_000}] * 90})
    with server.client(key) as c:
        r = c.post("/v1/turns", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "body over" in r.json()["detail"]


def test_openapi_is_served(server: Server) -> None:
    with server.client() as c:
        doc = c.get("/openapi.json").json()
    assert {"/v1/turns", "/v1/search", "/v1/episodes/{episode_id}", "/healthz"} <= set(doc["paths"])


def test_cross_tenant_matrix(server: Server) -> None:
    alice = server.key("alice")
    with server.client(alice) as c:
        assert c.post("/v1/turns", json={"turns": _turns("alice")}).json()["accepted"] == 24
        run = c.post("/v1/consolidate")
        assert run.status_code == 200, run.text
        assert run.json()["mode"] == "local" and run.json()["run_id"]
        eps = c.get("/v1/episodes").json()
        assert len(eps) >= 2
        detail = c.get(f"/v1/episodes/{eps[0]['episode_id']}").json()
        assert len(detail["turns"]) == detail["n_turns"] > 0
        own_hits = c.get("/v1/search", params={"q": "helm staging deploy", "k": 5}).json()
        assert own_hits
        alice_status = c.get("/v1/status").json()
    alice_ids = {e["episode_id"] for e in eps} | {h["item_id"] for h in own_hits}
    with server.client(alice) as c:
        missing = c.get("/v1/episodes/does-not-exist")
    assert missing.status_code == 404
    for hostile in HOSTILE:
        key = server.key(hostile)
        with server.client(key) as c:
            for path in ("/v1/episodes", "/v1/facts?all=true", "/v1/reflections", "/v1/status"):
                r = c.get(path)
                assert r.status_code == 200 and r.json() == [], (hostile, path, r.text)
            hits = c.get("/v1/search", params={"q": "helm staging deploy", "k": 50}).json()
            assert not alice_ids & {h["item_id"] for h in hits}, hostile
            for ep in eps:
                r = c.get(f"/v1/episodes/{ep['episode_id']}")
                assert (r.status_code, r.json()) == (404, missing.json()), hostile
            # a record naming alice is written to the caller's tenant, never alice's
            posted = c.post(
                "/v1/turns",
                json={
                    "turns": [
                        {"user_id": "alice", "stream_id": "s1", "role": "user", "text": hostile}
                    ]
                },
            ).json()
            assert posted["accepted"] == 1
            own = c.get("/v1/status").json()
            assert [s["user_id"] for s in own] == [hostile]
    with server.client(alice) as c:
        assert c.get("/v1/status").json()[0]["raw_turns"] == alice_status[0]["raw_turns"]


def test_keys_create_json_prints_the_key_once(tmp_path: Path) -> None:
    out = run_cli(tmp_path, "keys", "create", "--user", "U", "--json")
    assert out.returncode == 0, out.stderr
    created = json.loads(out.stdout)
    assert created["key"].startswith("ep_") and created["user_id"] == "U"
    listed = run_cli(tmp_path, "keys", "list", "--json")
    assert created["key"] not in listed.stdout and created["key_id"] in listed.stdout
    raw = b"".join(p.read_bytes() for p in (tmp_path / "lancedb").rglob("*") if p.is_file())
    assert created["key"].split("_", 2)[2].encode() not in raw  # only the salted HMAC is stored
