"""`episodic api`: the HTTP API (FastAPI on uvicorn), versioned under /v1.

Every /v1 route needs an API key (`Authorization: Bearer ep_...` or
`X-API-Key`); the tenant is the key's user, never a request field, and an id
of another tenant answers 404 exactly as a missing one. Bad input answers a
JSON 4xx (`{"detail": ...}`); keys are never logged.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal, cast

from fastapi import Depends, FastAPI, Header, HTTPException, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from episodic.adapters.cli.output import episode_view
from storage.keys import ApiKey, ApiKeys
from episodic.service.accept import GroupWriter, accept
from episodic.service.runtime import Runtime, get_runtime

MAX_TURNS = 1_000
MAX_BODY = 8 << 20  # bytes per request
API_VERSION = "v1"


# ---- response and request models (the OpenAPI contract) -----------------
class TurnsIn(BaseModel):
    """Generic JSONL records as objects: `role`, `text`, optional `ts`, `stream_id`,
    `kind`, `meta` and `id` (the client's turn id: a retry with it is a duplicate)."""

    turns: list[Any] = Field(max_length=MAX_TURNS)


class RejectOut(BaseModel):
    index: int
    reason: str


class TurnsOut(BaseModel):
    accepted: int
    duplicates: int
    rejected: list[RejectOut]


class HitOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    item_id: str
    kind: str
    text: str
    score: float


class FactOut(BaseModel):
    fact_id: str
    text: str
    status: str
    valid_from: datetime
    valid_to: datetime | None
    created_at: datetime
    importance: float
    source_episode_ids: list[str]


class EpisodeOut(BaseModel):
    episode_id: str
    stream_id: str
    first_seq: int
    last_seq: int
    n_turns: int
    started_at: datetime
    ended_at: datetime
    reason: str
    salience: int
    summary: str
    status: str


class TurnOut(BaseModel):
    turn_id: str
    seq: int
    role: str
    kind: str
    text: str
    event_ts: datetime


class EpisodeDetail(EpisodeOut):
    turns: list[TurnOut]


class ReflectionOut(BaseModel):
    reflection_id: str
    text: str
    importance: float
    created_at: datetime
    evidence_episode_ids: list[str]


class StreamOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    stream_id: str
    raw_turns: int
    watermark: int
    unprocessed_turns: int
    episodes: int


class ConsolidateOut(BaseModel):
    run_id: str
    mode: Literal["local", "deployment"]
    summary: dict[str, Any] | None = None


class Health(BaseModel):
    status: Literal["ok"]
    version: str


class Problem(BaseModel):
    detail: Any


# ---- body size limit -----------------------------------------------------
class BodyLimit:
    """413 for a body over `limit` bytes, declared or streamed."""

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
                    raise _TooBig()
            return msg

        try:
            await self.app(scope, limited, send)
        except _TooBig:
            await _send_json(send, 413, {"detail": f"body over {self.limit} bytes"})


class _TooBig(Exception):
    pass


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


# ---- auth ------------------------------------------------------------------
def _caller(
    request: Request, authorization: str | None, x_api_key: str | None, scope: str
) -> ApiKey:
    token = x_api_key
    if authorization and authorization[:7].lower() == "bearer ":
        token = authorization[7:].strip()
    keys: ApiKeys = request.app.state.keys
    found = keys.verify(token) if token else None
    if found is None:
        raise HTTPException(
            401, "missing or invalid API key", headers={"WWW-Authenticate": "Bearer"}
        )
    if scope not in found.scopes:
        raise HTTPException(403, f"this key lacks the {scope!r} scope")
    return found


def _key_with(scope: str) -> Callable[..., ApiKey]:
    """The dependency that reads the caller's key from the headers and
    requires `scope` of it."""

    def key(
        request: Request,
        authorization: Annotated[str | None, Header()] = None,
        x_api_key: Annotated[str | None, Header()] = None,
    ) -> ApiKey:
        return _caller(request, authorization, x_api_key, scope)

    return key


Reader = Annotated[ApiKey, Depends(_key_with("read"))]
Writer = Annotated[ApiKey, Depends(_key_with("write"))]


# ---- the app ---------------------------------------------------------------
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": Problem},
    401: {"model": Problem},
    403: {"model": Problem},
    404: {"model": Problem},
    413: {"model": Problem},
    422: {"model": Problem},
}


def create_app(rt: Runtime | None = None, keys: ApiKeys | None = None) -> FastAPI:
    rt = rt or get_runtime()
    keys = keys or ApiKeys(rt.store)
    writer = GroupWriter(rt.raw)
    app = FastAPI(
        title="episodic",
        version=API_VERSION,
        description=__doc__,
        responses=ERRORS,
    )
    app.state.writer = writer
    app.state.keys = keys

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        # the input is echoed back only as its location and message, never a header value
        errs = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", ""))} for e in exc.errors()]
        return JSONResponse(status_code=422, content={"detail": errs})

    @app.get("/healthz", response_model=Health, tags=["ops"])
    def healthz() -> Health:
        return Health(status="ok", version=API_VERSION)

    @app.post("/v1/turns", response_model=TurnsOut, tags=["write"])
    def post_turns(body: TurnsIn, key: Writer) -> dict[str, Any]:
        """Append a batch of turns to the caller's raw log (idempotent)."""
        out = accept(
            writer,
            body.turns,
            user_id=key.user_id,
            source=f"api:{key.key_id}",
            max_turn_chars=rt.settings.max_turn_chars,
        )
        return out.as_dict()

    @app.get("/v1/search", response_model=list[HitOut], tags=["read"])
    def search(
        key: Reader,
        q: Annotated[str, Query(min_length=1, max_length=4000)],
        k: Annotated[int, Query(ge=1, le=100)] = 10,
        kinds: Annotated[str, Query(max_length=200)] = "turns,facts,reflections",
    ) -> list[dict[str, Any]]:
        # the shipped search, as `episodic search` runs it (docs/retrieval.md)
        from episodic.service.search import MemoryOptions, search_memory

        try:
            opts = MemoryOptions(k=k, kinds=tuple(x.strip() for x in kinds.split(",") if x.strip()))
            return [i.as_dict() for i in search_memory(rt, key.user_id, q, opts)]
        except ValueError as e:
            raise HTTPException(400, str(e)) from e

    @app.get("/v1/facts", response_model=list[FactOut], tags=["read"])
    def facts(
        key: Reader,
        all_rows: Annotated[bool, Query(alias="all")] = False,
        as_of: datetime | None = None,
    ) -> list[dict[str, Any]]:
        from episodic.models import utc

        repo = rt.facts
        rows = (
            repo.as_of(key.user_id, utc(as_of))
            if as_of
            else repo.list(key.user_id, include_inactive=all_rows)
        )
        return [f.model_dump(exclude={"vector"}) for f in rows]

    @app.get("/v1/episodes", response_model=list[EpisodeOut], tags=["read"])
    def episodes(
        key: Reader,
        stream: Annotated[str | None, Query(max_length=512)] = None,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    ) -> list[dict[str, Any]]:
        eps = sorted(rt.episodes.list(key.user_id, stream), key=lambda e: e.ended_at)
        return [episode_view(e) for e in eps[-limit:][::-1]]

    @app.get("/v1/episodes/{episode_id}", response_model=EpisodeDetail, tags=["read"])
    def episode(
        episode_id: Annotated[str, Path(min_length=1, max_length=128)], key: Reader
    ) -> dict[str, Any]:
        found = rt.episodes.by_ids(key.user_id, [episode_id]) if episode_id else []
        if not found:
            raise HTTPException(404, "no such episode")
        e = found[0]
        turns = sorted(rt.raw.by_ids(key.user_id, list(e.turn_ids)), key=lambda t: t.seq)
        return {
            **episode_view(e),
            "turns": [
                {
                    "turn_id": t.turn_id,
                    "seq": t.seq,
                    "role": t.role,
                    "kind": t.kind,
                    "text": t.text,
                    "event_ts": t.event_ts,
                }
                for t in turns
            ],
        }

    @app.get("/v1/reflections", response_model=list[ReflectionOut], tags=["read"])
    def reflections(key: Reader) -> list[dict[str, Any]]:
        return [r.model_dump(exclude={"vector"}) for r in rt.reflections.list(key.user_id)]

    @app.get("/v1/status", response_model=list[StreamOut], tags=["read"])
    def status(key: Reader) -> list[dict[str, Any]]:
        from episodic.service.status import stream_status

        return [r.as_dict() for r in stream_status(rt, key.user_id)]

    @app.post("/v1/consolidate", response_model=ConsolidateOut, tags=["write"])
    def consolidate(key: Writer) -> dict[str, Any]:
        """Consolidate the caller's streams: the `consolidate` deployment when
        PREFECT_API_URL names a server, else the flow in this process."""
        return run_consolidate(key.user_id)

    return app


def run_consolidate(user_id: str) -> dict[str, Any]:
    if os.environ.get("PREFECT_API_URL"):
        from prefect.client.schemas.objects import FlowRun
        from prefect.deployments import run_deployment

        # Prefect's async_dispatch: from sync code (as here) the call returns the
        # FlowRun; its annotation also offers the coroutine of the async path
        run = cast(
            FlowRun,
            run_deployment("consolidate/consolidate", parameters={"user": user_id}, timeout=0),
        )
        return {"run_id": str(run.id), "mode": "deployment", "summary": None}
    from flows.consolidate import consolidate as flow

    state = flow(user=user_id, return_state=True)
    summary = state.result()
    return {
        "run_id": str(state.state_details.flow_run_id),
        "mode": "local",
        "summary": json.loads(json.dumps(summary, default=str)),
    }


def serve_api(host: str, port: int) -> None:
    import uvicorn

    app = BodyLimit(create_app())
    # access log off: a URL could carry a key a client put in the wrong place
    uvicorn.run(app, host=host, port=port, access_log=False, log_level="warning")
