"""`episodic api`: the HTTP API (FastAPI on uvicorn), versioned under /v1.

Every /v1 route needs an API key (`Authorization: Bearer ep_...` or
`X-API-Key`); the tenant is the key's user, never a request field, and an id
of another tenant answers 404 exactly as a missing one. Each route is one
call of the memory service and answers its views (episodic/service/views.py),
the same JSON the CLI's `--json` and the MCP tools give. Bad input answers a
JSON 4xx (`{"detail": ...}`); keys are never logged.
"""

from __future__ import annotations

import gc
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Annotated, Any, Literal

import anyio.to_thread
from fastapi import FastAPI, Header, HTTPException, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, Field

from episodic.adapters.autopilot import Autopilot
from episodic.adapters.http.auth import Reader, Writer
from episodic.adapters.http.limits import BodyLimit, TimedH11
from episodic.errors import BusyError, KeyReusedError, NotFoundError
from episodic.facts.schema import MAX_MERGE_TEXT
from episodic.service import views
from episodic.service.memory import Memory

MAX_TURNS = 1_000
API_VERSION = "v1"


# ---- what only the HTTP face has: the request body and its envelopes ----
class TurnsIn(BaseModel):
    """Generic JSONL records as objects: `role`, `text`, optional `ts`, `stream_id`,
    `kind`, `meta` and `id` (the client's turn id: a retry with it is a duplicate)."""

    turns: list[Any] = Field(max_length=MAX_TURNS)


class RewordIn(BaseModel):
    """What the fact should say."""

    text: str = Field(min_length=1, max_length=MAX_MERGE_TEXT)


class ConsolidateOut(BaseModel):
    """`local`: the run happened in this process, `summary` says what it did;
    `deployment`: a run of the `consolidate` deployment was queued, `run_id` names it."""

    mode: Literal["local", "deployment"]
    run_id: str | None = None
    summary: dict[str, Any] | None = None


class Me(BaseModel):
    """Whose key this is: its user, its id (never the secret) and its scopes."""

    user_id: str
    key_id: str
    scopes: list[str]


class Health(BaseModel):
    status: Literal["ok"]
    version: str


class Problem(BaseModel):
    detail: Any


ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": Problem},
    401: {"model": Problem},
    403: {"model": Problem},
    404: {"model": Problem},
    409: {"model": Problem},  # another run held the user past the wait: nothing done
    413: {"model": Problem},
    422: {"model": Problem},
}

Id = Annotated[str, Path(min_length=1, max_length=128)]
Question = Annotated[str, Query(min_length=1, max_length=4000)]
HitCount = Annotated[int, Query(ge=1, le=100)]
Kinds = Annotated[str, Query(max_length=200)]


def create_app(
    memory: Memory, *, owns_memory: bool = False, autopilot: Autopilot | None = None
) -> FastAPI:
    """The API over `memory`: one service call per route; `POST /v1/consolidate`
    uses the memory's runner. With `owns_memory` the app closes the memory as
    it shuts down (its recall bookkeeping written before the process goes:
    uvicorn ends on SIGTERM by re-raising it, which runs no `finally`);
    otherwise the caller closes it. With an `autopilot`, writes schedule their
    user's consolidation and `POST /v1/flush` runs it now."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if autopilot is not None:
            autopilot.start()
        try:
            yield
        finally:
            if autopilot is not None:
                await anyio.to_thread.run_sync(autopilot.stop)
            if owns_memory:
                await anyio.to_thread.run_sync(memory.close)

    # FastAPIOffline: /docs and /redoc load Swagger UI and ReDoc from the package, no CDN
    app = FastAPIOffline(
        title="episodic",
        version=API_VERSION,
        description=__doc__,
        responses=ERRORS,
        lifespan=lifespan,
    )
    app.state.memory = memory

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        # the input is echoed back only as its location and message, never a header value
        errs = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", ""))} for e in exc.errors()]
        return JSONResponse(status_code=422, content={"detail": errs})

    @app.exception_handler(NotFoundError)
    async def _missing(_: Request, exc: NotFoundError) -> JSONResponse:
        # the same answer for a missing id and another tenant's: nothing echoed
        return JSONResponse(status_code=404, content={"detail": f"no such {exc.kind}"})

    @app.exception_handler(KeyReusedError)
    async def _reused(_: Request, exc: KeyReusedError) -> JSONResponse:
        # the IETF Idempotency-Key draft: a key reused with another payload is a 422
        return JSONResponse(status_code=422, content={"detail": str(exc)})

    @app.exception_handler(BusyError)
    async def _busy(_: Request, exc: BusyError) -> JSONResponse:
        # a consolidation of the user held on past the wait: try again later
        return JSONResponse(status_code=409, content={"detail": str(exc)})

    @app.get("/healthz", response_model=Health, tags=["ops"])
    def healthz() -> Health:
        return Health(status="ok", version=API_VERSION)

    @app.post("/v1/turns", response_model=views.AddReceipt, tags=["write"])
    def post_turns(
        body: TurnsIn,
        key: Writer,
        idempotency_key: Annotated[str | None, Header(max_length=256)] = None,
    ) -> views.AddReceipt:
        """Append a batch of turns to the caller's raw log; the answer comes once
        they are durable, with an `ingest_id` (`GET /v1/ingests/{id}`). A retry
        with the same `Idempotency-Key` header gets the first answer and writes
        nothing; a record's `id` makes it idempotent on its own."""
        receipt = memory.add(
            key.user_id, body.turns, source=f"api:{key.key_id}", idempotency_key=idempotency_key
        )
        if autopilot is not None and receipt.accepted:
            autopilot.touch(key.user_id)
        return receipt

    @app.get("/v1/ingests/{ingest_id}", response_model=views.IngestStatus, tags=["read"])
    def ingest(ingest_id: Id, key: Reader) -> views.IngestStatus:
        """What became of one write: queued, consolidated (its episodes and facts) or failed."""
        return memory.ingest_status(key.user_id, ingest_id)

    @app.post("/v1/flush", response_model=ConsolidateOut, tags=["write"])
    def flush(key: Writer) -> ConsolidateOut:
        """ "I'm done, remember this now": consolidate the caller's streams,
        closing their open episodes."""
        out = (
            autopilot.flush(key.user_id)
            if autopilot is not None
            else memory.consolidate(key.user_id, flush=True)
        )
        return _consolidated(out)

    @app.get("/v1/search", response_model=list[views.Hit], tags=["read"])
    def search(
        key: Reader, q: Question, k: HitCount = 10, kinds: Kinds = "turns,facts,reflections"
    ) -> list[views.Hit]:
        """The shipped search, as `episodic search` runs it (docs/retrieval.md)."""
        wanted = tuple(x.strip() for x in kinds.split(",") if x.strip())
        try:
            return memory.search(key.user_id, q, k=k, kinds=wanted)
        except ValueError as e:
            raise HTTPException(400, str(e)) from e

    @app.get(
        "/v1/recall",
        response_model=list[views.HitBrief],
        response_model_exclude_none=True,
        tags=["read"],
    )
    def recall(
        key: Reader, q: Question, k: HitCount = 5, kinds: Kinds = "turns,facts,reflections"
    ) -> list[views.HitBrief]:
        """The same search, each hit in the brief form an agent reads (MCP's
        `recall`): text, when, score, context turns and episode."""
        return [h.brief() for h in search(key, q, k, kinds)]

    @app.get("/v1/facts", response_model=list[views.FactView], tags=["read"])
    def facts(
        key: Reader,
        all_rows: Annotated[bool, Query(alias="all")] = False,
        as_of: datetime | None = None,
    ) -> list[views.FactView]:
        """Active facts; `all` adds superseded and deleted ones; `as_of` gives
        those believed true then."""
        return memory.facts(key.user_id, as_of=as_of, include_inactive=all_rows)

    @app.get("/v1/facts/{fact_id}/history", response_model=list[views.FactEvent], tags=["read"])
    def fact_history(fact_id: Id, key: Reader) -> list[views.FactEvent]:
        """Every ADD / UPDATE / DELETE / NOOP decision on a fact (a unique prefix will do)."""
        return memory.fact_history(key.user_id, fact_id)

    @app.get("/v1/episodes", response_model=list[views.EpisodeView], tags=["read"])
    def episodes(
        key: Reader,
        stream: Annotated[str | None, Query(max_length=512)] = None,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    ) -> list[views.EpisodeView]:
        """The most recent episodes, newest first."""
        return memory.episodes(key.user_id, stream_id=stream, limit=limit)[::-1]

    @app.get("/v1/episodes/{episode_id}", response_model=views.EpisodeDetail, tags=["read"])
    def episode(episode_id: Id, key: Reader) -> views.EpisodeDetail:
        """One episode with its turns (a unique prefix of its id will do)."""
        return memory.episode(key.user_id, episode_id)

    @app.get("/v1/reflections", response_model=list[views.ReflectionView], tags=["read"])
    def reflections(
        key: Reader, all_rows: Annotated[bool, Query(alias="all")] = False
    ) -> list[views.ReflectionView]:
        """Reflections; `all` adds archived ones."""
        return memory.reflections(key.user_id, include_archived=all_rows)

    @app.get("/v1/status", response_model=list[views.StreamStatus], tags=["read"])
    def status(key: Reader) -> list[views.StreamStatus]:
        """Per stream: raw turns, watermark, lag, open episode, last run."""
        return memory.status(key.user_id)

    @app.get("/v1/usage", response_model=views.UsageView, tags=["read"])
    def usage(key: Reader, runs: Annotated[int, Query(ge=1, le=500)] = 20) -> views.UsageView:
        """Model calls, cache hits, tokens and cost of the recent consolidate runs."""
        return memory.usage(key.user_id, limit=runs)

    @app.get("/v1/me", response_model=Me, tags=["read"])
    def me(key: Reader) -> Me:
        """The caller's key: its user, id and scopes."""
        return Me(user_id=key.user_id, key_id=key.key_id, scopes=list(key.scopes))

    def corrected(fix: Callable[[], views.FactView]) -> views.FactView:
        try:
            return fix()
        except ValueError as e:  # an empty wording, a superseded fact
            raise HTTPException(400, str(e)) from e

    @app.post("/v1/facts/{fact_id}/invalidate", response_model=views.FactView, tags=["write"])
    def invalidate_fact(fact_id: Id, key: Writer) -> views.FactView:
        """The user's correction: the fact stops being believed (kept, reversible)."""
        actor = f"api:{key.key_id}"
        return corrected(lambda: memory.invalidate_fact(key.user_id, fact_id, actor=actor))

    @app.post("/v1/facts/{fact_id}/restore", response_model=views.FactView, tags=["write"])
    def restore_fact(fact_id: Id, key: Writer) -> views.FactView:
        """Undo an invalidation: the fact is active again."""
        actor = f"api:{key.key_id}"
        return corrected(lambda: memory.restore_fact(key.user_id, fact_id, actor=actor))

    @app.post("/v1/facts/{fact_id}/reword", response_model=views.FactView, tags=["write"])
    def reword_fact(fact_id: Id, body: RewordIn, key: Writer) -> views.FactView:
        """The user's fix of what a fact says: the new fact, superseding the
        old one (never believed again; its text stays in the history)."""
        actor = f"api:{key.key_id}"
        return corrected(lambda: memory.reword_fact(key.user_id, fact_id, body.text, actor=actor))

    def forget(user_id: str, **target: str) -> views.ForgetReceipt:
        # recalls a search noted write to the tables a forget compacts: written first
        memory.rt.recalls.flush()
        return memory.forget(user_id, **target)

    @app.delete("/v1/memory", response_model=views.ForgetReceipt, tags=["forget"])
    def forget_user(key: Writer) -> views.ForgetReceipt:
        """Erase everything of the caller's user from every file, this key
        included; the receipt holds per-table counts, never content."""
        return forget(key.user_id, actor=f"api:{key.key_id}")

    @app.delete("/v1/turns/{turn_id}", response_model=views.ForgetReceipt, tags=["forget"])
    def forget_turn(turn_id: Id, key: Writer) -> views.ForgetReceipt:
        """Erase one turn's text; what depended on it is derived again."""
        return forget(key.user_id, turn=turn_id, actor=f"api:{key.key_id}")

    @app.delete("/v1/episodes/{episode_id}", response_model=views.ForgetReceipt, tags=["forget"])
    def forget_episode(episode_id: Id, key: Writer) -> views.ForgetReceipt:
        """Erase one episode's turns; what depended on them is derived again."""
        return forget(key.user_id, episode=episode_id, actor=f"api:{key.key_id}")

    @app.delete("/v1/facts/{fact_id}", response_model=views.ForgetReceipt, tags=["forget"])
    def forget_fact(fact_id: Id, key: Writer) -> views.ForgetReceipt:
        """Erase one fact and its history."""
        return forget(key.user_id, fact=fact_id, actor=f"api:{key.key_id}")

    @app.post("/v1/consolidate", response_model=ConsolidateOut, tags=["write"])
    def consolidate(key: Writer, flush: bool = False) -> ConsolidateOut:
        """Consolidate the caller's streams: the `consolidate` deployment when
        the server was started with PREFECT_API_URL naming a Prefect server,
        else the flow in this process. `flush` also closes every open episode."""
        return _consolidated(memory.consolidate(key.user_id, flush=flush))

    from episodic.adapters.http.ui import mount_ui

    mount_ui(app, memory)  # the memory browser at /ui
    return app


def _consolidated(out: dict[str, Any]) -> ConsolidateOut:
    if out.get("mode") == "deployment":
        return ConsolidateOut(mode="deployment", run_id=str(out["run_id"]))
    return ConsolidateOut(mode="local", summary=out)


def serve_api(host: str, port: int) -> None:
    """The process entry point: one Memory from the environment, consolidating
    through the `consolidate` deployment when PREFECT_API_URL is set, else in
    a child process of a lower CPU priority (`ChildRunner`), so that writes
    are not answered behind a consolidation; closed (its journal stored, its
    recall bookkeeping written) when the server stops."""
    import uvicorn

    from episodic.adapters.child_runner import ChildRunner
    from episodic.adapters.runners import run_deployment

    child = None if os.environ.get("PREFECT_API_URL") else ChildRunner()
    runner = run_deployment if child is None else child
    # the journal: a write is answered after one fsync, stored in LanceDB just after
    try:
        with Memory(runner=runner, journal=True) as memory:
            pilot = Autopilot.configured(memory)
            app = BodyLimit(create_app(memory, owns_memory=True, autopilot=pilot))
            # the libraries' objects, loaded once, out of the collector: a full
            # collection walked them all (0.2 s with every request waiting:
            # the API's latency tail, docs/perf/notes.md)
            gc.freeze()
            # access log off: a URL could carry a key a client put in the wrong place
            uvicorn.run(
                app, host=host, port=port, access_log=False, log_level="warning", http=TimedH11
            )
    finally:
        if child is not None:
            child.close()
