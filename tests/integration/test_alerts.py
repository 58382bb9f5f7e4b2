"""Alerts against a real `prefect server start`: a webhook notification block
pointed at a local receiver, the automations of deployments/automations.yaml
applied twice (one of each), then a real consolidate run failing (its store
under a regular file) and a stream lagging past EPISODIC_ALERT_LAG_TURNS,
each arriving at the receiver as a notification."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from episodic.models import user_tag
from episodic.service.llm_server import free_port
from tests.integration.helpers import synthetic_stream, write_jsonl
from tests.integration.prefect_server import BIN, Server, prefect_server

pytestmark = pytest.mark.slow
EPISODIC = str(BIN / "episodic")
NOTIFY_S = 180.0  # the triggers and actions services run on their own loops


class Receiver:
    """A webhook on 127.0.0.1 keeping every JSON body POSTed to it."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        received = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                size = int(self.headers.get("Content-Length") or 0)
                received.append(json.loads(self.rfile.read(size) or b"{}"))
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def wait_for(self, match: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + NOTIFY_S
        while time.monotonic() < deadline:
            for body in list(self.bodies):
                if match(body):
                    print(
                        f"notified after {NOTIFY_S - (deadline - time.monotonic()):.0f} s: {body}"
                    )
                    return body
            time.sleep(1.0)
        raise AssertionError(f"no matching notification in {NOTIFY_S} s: {self.bodies}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with prefect_server(tmp_path_factory.mktemp("prefect-alerts")) as srv:
        yield srv


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    rec = Receiver()
    rec.thread.start()
    try:
        yield rec
    finally:
        rec.server.shutdown()
        rec.server.server_close()


def _episodic(
    srv: Server, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EPISODIC, *args],
        env={**srv.env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _json(res: subprocess.CompletedProcess[str]) -> Any:
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)


@pytest.fixture(scope="module")
def applied(server: Server, receiver: Receiver) -> dict[str, Any]:
    block = _json(_episodic(server, "alerts", "block", "--webhook", receiver.url, "--json"))
    assert block["type"] == "custom-webhook" and block["name"] == "episodic-alerts"
    first = _json(_episodic(server, "alerts", "apply", "--json"))
    return {"block": block, "first": first}


def test_apply_is_idempotent_by_name(server: Server, applied: dict[str, Any]) -> None:
    first = applied["first"]
    assert first["block"] == {
        "name": "custom-webhook/episodic-alerts",
        "id": applied["block"]["id"],
    }
    assert {a["action"] for a in first["automations"]} == {"created"}
    second = _json(_episodic(server, "alerts", "apply", "--json"))
    assert {a["action"] for a in second["automations"]} == {"updated"}
    ids = {a["name"]: a["id"] for a in first["automations"]}
    assert {a["name"]: a["id"] for a in second["automations"]} == ids
    on_server = server.post("/automations/filter", {})
    assert sorted(a["name"] for a in on_server) == sorted(ids)
    for auto in on_server:
        assert auto["enabled"]
        kinds = [x["type"] for x in auto["actions"]]
        if auto["name"] == "episodic-crash-zombie-runs":  # notifies nobody itself
            assert kinds == ["change-flow-run-state"]
            continue
        assert kinds == ["send-notification"]
        assert [x["block_document_id"] for x in auto["actions"]] == [applied["block"]["id"]]


def test_a_failed_consolidate_run_is_notified(
    server: Server, receiver: Receiver, applied: dict[str, Any]
) -> None:
    path = write_jsonl(server.home / "failu.jsonl", synthetic_stream(user="failu", stream="c"))
    _json(_episodic(server, "ingest", str(path), "--json"))
    # the run fails inside the flow: a write refused after the episodes (as a
    # full disk would), so Prefect records a Failed run
    res = _episodic(
        server,
        "consolidate",
        "--user",
        "failu",
        "--json",
        env={"EPISODIC_CRASHPOINT": "after_episodes:1:enospc"},
    )
    assert res.returncode == 4, res.stderr[-3000:]
    lines = res.stderr.splitlines()
    assert any(x.startswith("error: storage") for x in lines), res.stderr[-3000:]
    runs = server.post(
        "/flow_runs/filter", {"flow_runs": {"state": {"type": {"any_": ["FAILED"]}}}}
    )
    assert runs, "no Failed flow run recorded on the server"
    body = receiver.wait_for(
        lambda b: "consolidate" in b.get("subject", "") and "Failed" in b["subject"]
    )
    assert runs[0]["name"] in body["subject"]
    assert "Failed" in body["body"] and runs[0]["id"] in body["body"]


def test_a_lagging_stream_is_notified(
    server: Server, receiver: Receiver, applied: dict[str, Any]
) -> None:
    path = write_jsonl(server.home / "lagu.jsonl", synthetic_stream(user="lagu", stream="chat"))
    ingested = _json(_episodic(server, "ingest", str(path), "--json"))
    assert ingested["accepted"] > 5
    summary = _json(
        _episodic(
            server, "consolidate", "--user", "lagu", "--json", env={"EPISODIC_ALERT_LAG_TURNS": "5"}
        )
    )
    assert summary["turns_processed"] == ingested["accepted"]
    tag = user_tag("lagu")
    body = receiver.wait_for(lambda b: f"{tag}/chat" in b.get("subject", ""))
    assert "lagu" not in json.dumps(body)
    assert f"`episodic status --tag {tag}` shows where it stands" in body["body"]
    assert f"{ingested['accepted']} turns" in body["body"]
    assert "threshold 5" in body["body"]
    # the event itself, as the server stored it
    events = server.post(
        "/events/filter",
        {"filter": {"event": {"name": ["episodic.stream.lagging"]}}, "limit": 10},
    )
    found = [e for e in events["events"] if e["resource"]["episodic.user"] == tag]
    assert found and found[0]["payload"]["unprocessed_turns"] == ingested["accepted"]
