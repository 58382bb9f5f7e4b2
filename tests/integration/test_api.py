"""The HTTP API in process (FastAPI's TestClient over the app, a real LanceDB
in tmp_path): each route answers the memory service's views, idempotent
turns, auth and scopes, JSON 4xx for bad input, the body limit, the
consolidation runner, and a cross-tenant matrix over every endpoint.
test_api_served.py runs the real `episodic api` process."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from episodic.adapters.embedded import Memory as Embedded
from episodic.service.memory import Memory
from storage.keys import ApiKeys
from tests.integration.api_support import api_client, new_key
from tests.integration.helpers import MEMORIES, make_memory, settings_at, synthetic_stream

HOSTILE = ["' OR '1'='1", "alice%", "ALICE", "alice ", "*", "alice/../bob", "ｱlice"]
READS = ("/v1/episodes", "/v1/facts?all=true", "/v1/reflections", "/v1/status")


def _turns(user: str, n_per_topic: int = 6) -> list[dict[str, Any]]:
    turns = synthetic_stream(user=user, stream="s1", n_per_topic=n_per_topic, gap_minutes=45)
    turns += [
        {"user_id": user, "stream_id": "s1", "role": "user", "text": text, "ts": ts}
        for text, ts in (
            ("I live in Paris.", "2025-03-02T09:00:00+00:00"),
            ("I moved to Berlin.", "2025-03-09T09:00:00+00:00"),
            ("See you tomorrow.", "2025-03-10T09:00:00+00:00"),  # closes the Berlin episode
        )
    ]
    for t in turns:
        t.pop("user_id")  # the key says who; a field would be ignored anyway
    return turns


def _json(views: list[Any]) -> list[dict[str, Any]]:
    return [v.as_json() for v in views]


def _status(rows: list[Any]) -> list[dict[str, Any]]:
    """Stream status as JSON, without its one clock reading (the lag's age)."""
    from pydantic import TypeAdapter

    from episodic.service.views import StreamStatus

    if rows and isinstance(rows[0], StreamStatus):
        rows = TypeAdapter(list[StreamStatus]).dump_python(rows, mode="json")
    return [{k: v for k, v in r.items() if k != "oldest_unprocessed_age_s"} for r in rows]


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    return make_memory(tmp_path / "home")


def test_post_twice_accepts_then_counts_duplicates(memory: Memory) -> None:
    batch = _turns("dup-user")[:10] + [{"text": "no role"}, 7]
    with api_client(memory, new_key(memory, "dup-user")) as c:
        first = c.post("/v1/turns", json={"turns": batch})
        second = c.post("/v1/turns", json={"turns": batch})
        status = c.get("/v1/status").json()
    assert first.status_code == 200, first.text
    assert first.json()["accepted"] == 10 and first.json()["duplicates"] == 0
    assert len(first.json()["turn_ids"]) == 10
    assert [r["index"] for r in first.json()["rejected"]] == [10, 11]
    assert "missing field: role" in first.json()["rejected"][0]["reason"]
    assert second.json()["accepted"] == 0 and second.json()["duplicates"] == 10
    assert _status(status) == _status(memory.status("dup-user"))
    assert sum(s["raw_turns"] for s in status) == 10
    # rejected items are quarantined under the caller's tenant, as file ingest does
    from storage.filters import user

    rej = memory.rt.store.table("rejected_input")
    rows = rej.search().where(user("dup-user").lance).limit(100).to_list()
    assert len(rows) == 2 and {r["line_no"] for r in rows} == {10, 11}
    assert {r["source"] for r in rows} <= {f"api:{k.key_id}" for k in memory.keys.list("dup-user")}


def test_client_id_makes_a_retry_a_duplicate_and_keeps_the_first_text(memory: Memory) -> None:
    def post(text: str) -> dict[str, Any]:
        r = c.post("/v1/turns", json={"turns": [{"id": "m1", "role": "user", "text": text}]})
        assert r.status_code == 200, r.text
        return dict(r.json())

    with api_client(memory, new_key(memory, "id-user")) as c:
        first, retry, changed = post("a"), post("a"), post("a!")
    assert (first["accepted"], retry["accepted"], retry["duplicates"]) == (1, 0, 1)
    assert changed["accepted"] == 0  # a changed retry never replaces what was stored
    [turn] = memory.rt.raw.by_ids("id-user", first["turn_ids"])
    assert turn.text == "a" and retry["turn_ids"] == first["turn_ids"]


def test_auth_missing_bad_scope_and_revoked(memory: Memory) -> None:
    with api_client(memory) as c:
        for path in READS:
            r = c.get(path)
            assert r.status_code == 401 and r.json() == {"detail": "missing or invalid API key"}
        r = c.post("/v1/turns", json={"turns": []}, headers={"X-API-Key": "ep_0_nope"})
        assert r.status_code == 401
    with api_client(memory, new_key(memory, "ro-user", ("read",))) as c:
        assert c.get("/v1/status").status_code == 200
        r = c.post("/v1/turns", json={"turns": [{"role": "user", "text": "x"}]})
        assert r.status_code == 403 and "write" in r.json()["detail"]
        assert c.post("/v1/consolidate").status_code == 403
    key = new_key(memory, "revoked-user")
    with api_client(memory, key) as c:
        assert c.get("/v1/status").status_code == 200  # verified, and cached
        # revoked elsewhere (another process's keys, as `episodic keys revoke`)
        assert ApiKeys(memory.rt.store).revoke(key.split("_")[1])
        time.sleep(2.5)  # the verified-key cache holds a key for 2 s
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
    "/v1/facts/nope/history",
    "/v1/episodes?limit=-1",
    "/v1/episodes/nope",
    "/v1/episodes/" + "x" * 200,
]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [("post", "/v1/turns", b) for b in BAD_TURNS] + [("get", p, None) for p in BAD_GETS],
)
def test_bad_input_answers_json_4xx(
    memory: Memory, method: str, path: str, body: bytes | str | None
) -> None:
    with api_client(memory, new_key(memory, "bad-input-user")) as c:
        r = c.request(
            method.upper(), path, content=body, headers={"content-type": "application/json"}
        )
    assert 400 <= r.status_code < 500, (r.status_code, r.text)
    assert "detail" in r.json()


def test_bad_kind_says_which_kinds_there_are(memory: Memory) -> None:
    with api_client(memory, new_key(memory, "kinds-user")) as c:
        r = c.get("/v1/search", params={"q": "x", "kinds": "turns,bogus"})
    assert r.status_code == 400
    assert r.json()["detail"] == "unknown kind 'bogus'; choose from turns, facts, reflections"


def test_body_over_the_limit_is_413_declared_or_streamed(memory: Memory) -> None:
    big = json.dumps({"turns": [{"role": "user", "text": "x" * 100_000}] * 90}).encode()
    assert len(big) > 8 << 20

    def chunks() -> Iterator[bytes]:  # no content-length: the limit counts what arrives
        for i in range(0, len(big), 1 << 20):
            yield big[i : i + (1 << 20)]

    with api_client(memory, new_key(memory, "big-user")) as c:
        declared = c.post("/v1/turns", content=big, headers={"content-type": "application/json"})
        streamed = c.post(
            "/v1/turns", content=chunks(), headers={"content-type": "application/json"}
        )
        status = c.get("/v1/status").json()
    for r in (declared, streamed):
        assert r.status_code == 413 and "body over" in r.json()["detail"], r.text
    assert status == []  # nothing of either was written


def test_openapi_documents_the_views(memory: Memory) -> None:
    with api_client(memory) as c:
        doc = c.get("/openapi.json").json()
    paths = set(doc["paths"])
    assert {"/v1/turns", "/v1/search", "/v1/episodes/{episode_id}", "/healthz"} <= paths
    assert "/v1/facts/{fact_id}/history" in paths
    schemas = doc["components"]["schemas"]
    # one type per concept: the service's views, no copies of the API's own
    views = {"Hit", "HitTurn", "FactView", "FactEvent", "EpisodeView", "EpisodeDetail"}
    assert views | {"ReflectionView", "AddReceipt", "StreamStatus"} <= set(schemas)
    assert not {"HitOut", "FactOut", "EpisodeOut", "TurnOut", "ReflectionOut"} & set(schemas)
    ok = doc["paths"]["/v1/search"]["get"]["responses"]["200"]["content"]["application/json"]
    assert ok["schema"]["items"] == {"$ref": "#/components/schemas/Hit"}


@dataclass
class FakeRunner:
    answer: dict[str, Any]
    calls: list[dict[str, Any]]

    def __call__(
        self, memory: Memory, *, user_id: str | None, flush: bool, shard: str | None
    ) -> dict[str, Any]:
        self.calls.append({"user_id": user_id, "flush": flush, "shard": shard})
        return self.answer


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"turns_processed": 3, "users": ["u"]}, {"mode": "local", "run_id": None}),
        ({"run_id": "r-1", "mode": "deployment"}, {"mode": "deployment", "run_id": "r-1"}),
    ],
)
def test_consolidate_is_the_memory_runner_for_the_key_user(
    tmp_path: Path, answer: dict[str, Any], expected: dict[str, Any]
) -> None:
    runner = FakeRunner(answer, [])
    memory = MEMORIES.enter_context(Memory(settings_at(tmp_path / "home"), runner=runner))
    with api_client(memory, new_key(memory, "runner-user")) as c:
        r = c.post("/v1/consolidate", params={"user": "someone-else"})
    assert r.status_code == 200, r.text
    summary = answer if expected["mode"] == "local" else None
    assert r.json() == {**expected, "summary": summary}
    assert runner.calls == [{"user_id": "runner-user", "flush": False, "shard": None}]


@pytest.mark.parametrize("prefect_api", [None, "http://127.0.0.1:9/api"])
def test_serve_api_builds_one_memory_with_its_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefect_api: str | None
) -> None:
    import uvicorn

    from episodic.adapters.child_runner import ChildRunner
    from episodic.adapters.http.app import serve_api
    from episodic.adapters.http.limits import BodyLimit
    from episodic.adapters.runners import run_deployment

    monkeypatch.setenv("EPISODIC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("EPISODIC_LLM", "offline")
    if prefect_api:
        monkeypatch.setenv("PREFECT_API_URL", prefect_api)
    else:
        monkeypatch.delenv("PREFECT_API_URL", raising=False)
    served: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append((app, kw)))
    serve_api("127.0.0.1", 8799)
    [(app, kw)] = served
    assert isinstance(app, BodyLimit)
    memory = cast(FastAPI, app.app).state.memory
    if prefect_api:
        assert memory.runner is run_deployment
    else:  # consolidations in a child process of lower priority, never in the server's
        assert isinstance(memory.runner, ChildRunner)
    assert memory.settings.home == tmp_path / "home"
    assert kw["host"] == "127.0.0.1" and kw["port"] == 8799 and kw["access_log"] is False


# ---- on a consolidated store -------------------------------------------------
@dataclass
class Alice:
    memory: Memory
    key: str
    consolidated: dict[str, Any]

    def client(self) -> TestClient:
        return api_client(self.memory, self.key)


@pytest.fixture(scope="module")
def alice(tmp_path_factory: pytest.TempPathFactory, prefect_harness: None) -> Iterator[Alice]:
    """Alice's turns posted and consolidated through the API (the flow in
    this process, the runner the Python face's memory has)."""
    home = tmp_path_factory.mktemp("alice") / "home"
    with Embedded(settings_at(home)) as memory:
        key = new_key(memory, "alice")
        with api_client(memory, key) as c:
            posted = c.post("/v1/turns", json={"turns": _turns("alice")}).json()
            assert posted["accepted"] == 27, posted
            run = c.post("/v1/consolidate")
            assert run.status_code == 200, run.text
        yield Alice(memory, key, run.json())


@pytest.mark.slow
def test_consolidate_ran_the_flow_here(alice: Alice) -> None:
    run = alice.consolidated
    assert run["mode"] == "local" and run["run_id"] is None
    assert run["summary"]["users"] == ["alice"] and run["summary"]["turns_processed"] == 27
    assert alice.memory.status("alice")[0].last_run_state == "Completed"


@pytest.mark.slow
def test_reads_answer_the_memory_views(alice: Alice) -> None:
    m = alice.memory
    with alice.client() as c:
        facts = c.get("/v1/facts").json()
        every = c.get("/v1/facts", params={"all": "true"}).json()
        then = c.get("/v1/facts", params={"as_of": "2025-03-05T00:00:00Z"}).json()
        eps = c.get("/v1/episodes").json()
        two = c.get("/v1/episodes", params={"limit": 2}).json()
        refl = c.get("/v1/reflections", params={"all": "true"}).json()
        status = c.get("/v1/status").json()
        histories = {f["fact_id"]: c.get(f"/v1/facts/{f['fact_id']}/history") for f in every}
        detail = c.get(f"/v1/episodes/{eps[0]['episode_id']}").json()
        by_prefix = c.get(f"/v1/episodes/{eps[0]['episode_id'][:12]}").json()
    from datetime import UTC, datetime

    assert facts and facts == _json(m.facts("alice"))
    assert len(every) > len(facts) and every == _json(m.facts("alice", include_inactive=True))
    assert then == _json(m.facts("alice", as_of=datetime(2025, 3, 5, tzinfo=UTC)))
    assert any("Paris" in f["text"] for f in then) and not any("Berlin" in f["text"] for f in then)
    # newest first
    assert len(eps) >= 2 and eps == _json(m.episodes("alice"))[::-1]
    assert two == eps[:2]
    assert refl == _json(m.reflections("alice", include_archived=True))
    assert _status(status) == _status(m.status("alice"))
    for fact_id, r in histories.items():
        assert r.status_code == 200 and r.json() == _json(m.fact_history("alice", fact_id))
    assert any(e["event"] == "UPDATE" for r in histories.values() for e in r.json())
    assert detail == m.episode("alice", eps[0]["episode_id"]).as_json() == by_prefix
    assert len(detail["turns"]) == detail["n_turns"] > 0


@pytest.mark.slow
def test_search_answers_the_shipped_hits(alice: Alice) -> None:
    with alice.client() as c:
        hits = c.get("/v1/search", params={"q": "where does alice live", "k": 7}).json()
        facts_only = c.get("/v1/search", params={"q": "Berlin", "kinds": "facts"}).json()
    assert 0 < len(hits) <= 7
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    turn = next(h for h in hits if h["kind"] == "turn")
    assert turn["turns"][0]["turn_id"] == turn["item_id"] and turn["episode_id"]
    assert facts_only and {h["kind"] for h in facts_only} == {"fact"}
    active = {f.fact_id for f in alice.memory.facts("alice", include_inactive=True)}
    assert {h["item_id"] for h in facts_only} <= active
    # the brief form an agent reads: the same hits, a fraction of the characters
    with alice.client() as c:
        brief = c.get("/v1/recall", params={"q": "where does alice live", "k": 7}).json()
    assert [h["id"] for h in brief] == [h["item_id"] for h in hits]
    assert [h["text"] for h in brief] == [h["text"] for h in hits]
    assert all("rrf" not in h and "turns" not in h for h in brief)
    assert next(h for h in brief if h["kind"] == "turn")["when"]
    assert len(json.dumps(brief)) < len(json.dumps(hits)) / 2


@pytest.mark.slow
def test_cross_tenant_matrix(alice: Alice) -> None:
    m = alice.memory
    with alice.client() as c:
        eps = c.get("/v1/episodes").json()
        own_hits = c.get("/v1/search", params={"q": "helm staging deploy", "k": 5}).json()
        fact_ids = [f["fact_id"] for f in c.get("/v1/facts", params={"all": "true"}).json()]
        missing = c.get("/v1/episodes/does-not-exist")
        no_fact = c.get("/v1/facts/does-not-exist/history")
    alice_status = m.status("alice")
    assert own_hits and fact_ids
    assert (missing.status_code, missing.json()) == (404, {"detail": "no such episode"})
    assert (no_fact.status_code, no_fact.json()) == (404, {"detail": "no such fact"})
    alice_ids = {e["episode_id"] for e in eps} | {h["item_id"] for h in own_hits}
    for hostile in HOSTILE:
        with api_client(m, new_key(m, hostile)) as c:
            for path in READS:
                r = c.get(path)
                assert r.status_code == 200 and r.json() == [], (hostile, path, r.text)
            hits = c.get("/v1/search", params={"q": "helm staging deploy", "k": 50}).json()
            assert not alice_ids & {h["item_id"] for h in hits}, hostile
            for ep in eps:
                r = c.get(f"/v1/episodes/{ep['episode_id']}")
                assert (r.status_code, r.json()) == (404, missing.json()), hostile
                r = c.get(f"/v1/episodes/{ep['episode_id'][:8]}")  # a prefix neither
                assert (r.status_code, r.json()) == (404, missing.json()), hostile
            for fact_id in fact_ids:
                r = c.get(f"/v1/facts/{fact_id}/history")
                assert (r.status_code, r.json()) == (404, no_fact.json()), hostile
            # a record naming alice is written to the caller's tenant, never alice's
            record = {"user_id": "alice", "stream_id": "s1", "role": "user", "text": hostile}
            posted = c.post("/v1/turns", json={"turns": [record]}).json()
            assert posted["accepted"] == 1
            own = c.get("/v1/status").json()
            assert [s["user_id"] for s in own] == [hostile]
    assert m.status("alice")[0].raw_turns == alice_status[0].raw_turns
