"""The request body limit: 413 for a body over the limit, declared or streamed."""

from __future__ import annotations

import json
from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY = 8 << 20  # bytes per request


class BodyLimit:
    """413 for a body over `limit` bytes, declared (content-length) or streamed."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY) -> None:
        self.app = app
        self.limit = limit

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

        async def limited() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    raise _TooBig(self.limit)
            return msg

        try:
            await self.app(scope, limited, send)
        except _TooBig as e:
            await _send_json(send, 413, {"detail": e.detail})


class _TooBig(HTTPException):
    """Raised from the body as it streams in: an HTTPException, so the app's
    body parsing passes it on (any other error there becomes a 400) and its
    handler answers the 413; caught here when it reaches the limit's own call."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"body over {limit} bytes")


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})
