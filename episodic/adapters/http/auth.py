"""API key auth: `Authorization: Bearer ep_...` or `X-API-Key`, verified by
the app's memory (`Memory.verify_key`). The tenant is the key's user, never a
request field; keys are never logged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Header, HTTPException, Request

from episodic.service.memory import Memory
from storage.keys import ApiKey


def caller(
    request: Request, authorization: str | None, x_api_key: str | None, scope: str
) -> ApiKey:
    """The key the request carries, live and holding `scope`; else 401 / 403."""
    token = x_api_key
    if authorization and authorization[:7].lower() == "bearer ":
        token = authorization[7:].strip()
    memory: Memory = request.app.state.memory
    found = memory.verify_key(token) if token else None
    if found is None:
        raise HTTPException(
            401, "missing or invalid API key", headers={"WWW-Authenticate": "Bearer"}
        )
    if scope not in found.scopes:
        raise HTTPException(403, f"this key lacks the {scope!r} scope")
    return found


def key_with(scope: str) -> Callable[..., ApiKey]:
    """The dependency that reads the caller's key from the headers and
    requires `scope` of it."""

    def key(
        request: Request,
        authorization: Annotated[str | None, Header()] = None,
        x_api_key: Annotated[str | None, Header()] = None,
    ) -> ApiKey:
        return caller(request, authorization, x_api_key, scope)

    return key


Reader = Annotated[ApiKey, Depends(key_with("read"))]
Writer = Annotated[ApiKey, Depends(key_with("write"))]
