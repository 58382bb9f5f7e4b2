"""Half-sent requests cannot hold the API (issue 32, finding 9): a request
head that does not complete is cut off, a body that stops arriving answers
408, a streamed body over the limit 413, and the server keeps answering
others meanwhile. Real sockets against uvicorn with the protocol and limits
`episodic api` serves with (timeouts shortened for the test)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from episodic.adapters.http.app import create_app
from episodic.adapters.http.limits import MAX_BODY, BodyLimit, TimedH11
from tests.integration.api_support import free_port, new_key
from tests.integration.helpers import make_memory


class QuickH11(TimedH11):
    head_s = 1.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[int, str]]:
    memory = make_memory(tmp_path)
    key = new_key(memory, "u")
    port = free_port()
    app = BodyLimit(create_app(memory), body_s=1.0)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", http=QuickH11)
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not srv.started:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    yield port, key
    srv.should_exit = True
    thread.join(timeout=30)


def _closed_within(sock: socket.socket, seconds: float) -> bytes:
    sock.settimeout(seconds)
    data = b""
    try:
        while chunk := sock.recv(4096):
            data += chunk
    except TimeoutError:
        pytest.fail(f"still open after {seconds} s; got {data[:80]!r}")
    return data


def test_half_sent_heads_are_cut_off_and_others_still_served(server: tuple[int, str]) -> None:
    port, key = server
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
    for i, s in enumerate(held):
        s.sendall(
            b"POST /v1/turns HTTP/1.1\r\nHost: x\r\n"
            + (b"Authorization: Bearer " if i % 2 else b"")
        )
    ok = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
    assert ok.status_code == 200
    for s in held:
        _closed_within(s, 10.0)
        s.close()


def test_a_body_that_stops_arriving_answers_408(server: tuple[int, str]) -> None:
    port, key = server
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(
        b"POST /v1/turns HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Authorization: Bearer {key}\r\nContent-Length: 100\r\n\r\n".encode()
        + b'{"turns": ['
    )
    answer = _closed_within(s, 10.0)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:120]


def test_a_chunked_body_over_the_limit_answers_413(server: tuple[int, str]) -> None:
    port, key = server

    def body() -> Iterator[bytes]:
        yield b'{"turns": ["'
        for _ in range(MAX_BODY // (1 << 16) + 2):
            yield b"x" * (1 << 16)
        yield b'"]}'

    r = httpx.post(
        f"http://127.0.0.1:{port}/v1/turns",
        content=body(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        timeout=60,
    )
    assert r.status_code == 413, r.text[:200]
