"""Limits on what a client can hold: 413 for a body over the limit, declared
or streamed; 408 for a body that does not arrive within `BODY_S`; and a
connection closed when its request head has not arrived within `HEAD_S`
(`TimedH11`, the HTTP protocol `episodic api` serves with), so half-sent
requests cannot hold the server's connections open."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import h11
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_BODY = 8 << 20  # bytes per request
HEAD_S = 10.0  # from connecting (or the last answer) to a complete request head
BODY_S = 30.0  # most time between two pieces of a request body


class BodyLimit:
    """413 for a body over `limit` bytes, declared (content-length) or streamed."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY, body_s: float = BODY_S) -> None:
        self.app = app
        self.limit = limit
        self.body_s = body_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                too_big = int(declared) > self.limit
            except ValueError:
                too_big = True
            if too_big:
                await _send_json(send, 413, {"detail": f"body over {self.limit} bytes"})
                return
        seen = 0
        complete = False

        async def limited() -> Message:
            nonlocal seen, complete
            if complete:  # after the body: a wait for disconnect, not timed
                return await receive()
            try:
                with anyio.fail_after(self.body_s):
                    msg = await receive()
            except TimeoutError:
                raise _Slow(self.body_s) from None
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                complete = not msg.get("more_body", False)
                if seen > self.limit:
                    raise _TooBig(self.limit)
            return msg

        try:
            await self.app(scope, limited, send)
        except (_TooBig, _Slow) as e:
            await _send_json(send, e.status_code, {"detail": e.detail})


class _TooBig(HTTPException):
    """Raised from the body as it streams in: an HTTPException, so the app's
    body parsing passes it on (any other error there becomes a 400) and its
    handler answers the 413; caught here when it reaches the limit's own call."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"body over {limit} bytes")


class _Slow(HTTPException):
    def __init__(self, seconds: float) -> None:
        super().__init__(408, f"the request body did not arrive within {seconds:g} s")


class TimedH11(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head is not
    complete `HEAD_S` after it connected or got its last answer (uvicorn's own
    keep-alive timer restarts on every byte, so a trickle would hold it)."""

    head_s = HEAD_S
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE and self._head_timer is not None:
            self._head_timer.cancel()  # the head is in: the body has its own limit
            self._head_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self.loop.call_later(self.head_s, self._head_late)

    def _head_late(self) -> None:
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
