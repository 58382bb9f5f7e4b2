"""A scriptable HTTP server on 127.0.0.1 for driving the real LLM SDKs in tests.

Each test queues actions (an answer, an HTTP status, a delay, garbage ...);
the server pops one per request and records every request it saw. When the
queue is empty it asks `default(n)` for the next action, so a randomized test
can script an unbounded run. Usage is counted only for answers actually
delivered, so a test can compare the client's accounting with the server's.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass(frozen=True)
class Answer:
    """The model answers with `value` (a tool call, or JSON text in JSON mode)."""

    value: dict[str, Any]
    input_tokens: int = 20
    output_tokens: int = 7


@dataclass(frozen=True)
class Text:
    """The model answers with raw text where JSON was expected (malformed output)."""

    text: str
    input_tokens: int = 20
    output_tokens: int = 3


@dataclass(frozen=True)
class Status:
    code: int
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "scripted error"


@dataclass(frozen=True)
class Delay:
    """Sleep before answering; longer than the client timeout, it is a timeout."""

    seconds: float
    then: Answer | Text


@dataclass(frozen=True)
class Garbage:
    """A 200 whose body is not JSON at all (a broken proxy)."""

    body: str = "<html>upstream hiccup</html>{"


Action = Answer | Text | Status | Delay | Garbage


@dataclass
class Served:
    answers: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    late: int = 0  # answers written after a delay: the client has given up


class ScriptedServer:
    """Base class: subclasses render an action into their API's wire format."""

    path = "/"

    def __init__(self, default: Callable[[int], Action] | None = None) -> None:
        self.queue: deque[Action] = deque()
        self.default = default
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.actions: list[Action] = []
        self.served = Served()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # -- lifecycle -------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting -------------------------------------------------------
    def push(self, *actions: Action) -> None:
        with self._lock:
            self.queue.extend(actions)

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Action:
        with self._lock:
            n = len(self.requests)
            self.requests.append(body)
            self.headers.append(headers)
            if self.queue:
                action = self.queue.popleft()
            elif self.default is not None:
                action = self.default(n)
            else:
                action = Status(500, message="stub queue is empty")
            self.actions.append(action)
            return action

    def _count(self, action: Answer | Text, *, late: bool) -> None:
        with self._lock:
            if late:
                self.served.late += 1
            else:
                self.served.answers += 1
                self.served.input_tokens += action.input_tokens
                self.served.output_tokens += action.output_tokens

    # -- wire format (subclasses) ----------------------------------------
    def render_answer(self, action: Answer | Text, request: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def render_error(self, action: Status) -> dict[str, Any]:
        raise NotImplementedError

    # -- HTTP ------------------------------------------------------------
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != server.path:
                    self._send(404, {}, b'{"error": "no such path"}')
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {}, b'{"error": "bad json"}')
                    return
                action = server._next(body, {k.lower(): v for k, v in self.headers.items()})
                late = False
                if isinstance(action, Delay):
                    time.sleep(action.seconds)
                    action, late = action.then, True
                if isinstance(action, Status):
                    payload = json.dumps(server.render_error(action)).encode()
                    self._send(action.code, action.headers, payload)
                elif isinstance(action, Garbage):
                    self._send(200, {}, action.body.encode())
                else:
                    payload = json.dumps(server.render_answer(action, body)).encode()
                    # Counted before writing: the client may act on the answer
                    # before this thread runs again. A write to a waiting client
                    # does not fail; one after a delay is `late` either way.
                    server._count(action, late=late)
                    self._send(200, {}, payload)

            def _send(self, code: int, headers: dict[str, str], payload: bytes) -> None:
                try:
                    self.send_response(code)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout): nothing to tell it

        return Handler
