"""The memory browser at `/ui`, served by `episodic api`: server-rendered
pages (Jinja2, plain HTML forms, one stylesheet served from the package), no
separate server, no build step, nothing loaded from the network.

A key opens it for that key's user only: the login form takes the key once,
the server keeps it in this process's memory under a random session id, and
the browser holds only that id, in an HttpOnly, SameSite=Strict cookie
scoped to /ui. Every page re-verifies the key (a revoked key logs out within
the key cache's 2 s), and every page reads only the key's user through the
`Memory` verbs every face calls. Actions (invalidate or restore a fact,
forget a fact, turn, episode or everything) need the `write` scope, a
confirmation page, and the session's CSRF token; the key is never logged or
rendered."""

from __future__ import annotations

import inspect
import math
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Form, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import BaseModel, Field

from episodic.errors import BusyError, NotFoundError
from episodic.facts.schema import MAX_MERGE_TEXT
from episodic.service.memory import Memory
from episodic.service.views import EpisodeView, FactView, Hit
from storage.keys import ApiKey

HERE = Path(__file__).parent
COOKIE = "episodic_ui"
SESSION_TTL_S = 12 * 3600
FACT_STATUSES = ("active", "superseded", "deleted")
FACT_SORTS = ("valid_from", "created_at", "importance", "recall_count", "text")
ACTIONS = {
    # action: (what it does, the kind of its target)
    "invalidate": ("Invalidate this fact: it stops being believed, is kept, and "
                   "can be restored (a DELETE by user-correction in its history).", "fact"),
    "restore": ("Restore this fact: it is believed again (an ADD by "
                "user-correction in its history).", "fact"),
    "reword": ("Reword this fact: a new fact says it, superseding this one "
               "(an UPDATE by user-correction in its history).", "fact"),
    "forget-fact": ("Forget this fact: its row, the wordings it was reworded from "
                    "and their history are erased from every file; reflections "
                    "citing it go.", "fact"),
    "forget-turn": ("Forget this turn: its text is erased (a tombstone keeps its "
                    "place), its episode's summary, the facts only it supported and "
                    "the reflections citing it are derived again.", "turn"),
    "forget-episode": ("Forget this episode: its turns' text is erased; the facts "
                       "only it supported and the reflections citing it go.", "episode"),
    "forget-user": ("Forget everything: every turn, episode, fact, reflection, "
                    "key (this one too), offset and cached model answer of this "
                    "user is erased from every file, older table versions "
                    "included. This cannot be undone.", "user"),
}  # fmt: skip


class FactFilter(BaseModel):
    """The facts page's query: which facts, in which order."""

    status: str = Field("active", max_length=20)
    sort: str = Field("valid_from", max_length=20)
    desc: bool = True
    q: str = Field("", max_length=200)
    as_of: str = Field("", max_length=40)


@dataclass
class _Session:
    secret: str
    csrf: str
    created: float = field(default_factory=time.monotonic)


class Sessions:
    """Session id -> the key it was opened with, in this process only."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[str, _Session] = {}

    def open(self, secret: str) -> str:
        sid = secrets.token_urlsafe(32)
        with self._lock:
            now = time.monotonic()
            self._by_id = {k: v for k, v in self._by_id.items() if now - v.created < SESSION_TTL_S}
            self._by_id[sid] = _Session(secret, secrets.token_urlsafe(24))
        return sid

    def get(self, sid: str | None) -> _Session | None:
        if not sid:
            return None
        with self._lock:
            s = self._by_id.get(sid)
            if s is not None and time.monotonic() - s.created >= SESSION_TTL_S:
                del self._by_id[sid]
                s = None
            return s

    def close(self, sid: str | None) -> None:
        with self._lock:
            self._by_id.pop(sid or "", None)


class _LoginNeeded(Exception):
    """No live session: the handler sends the browser to the login form."""


@dataclass(frozen=True)
class Viewer:
    """Who is looking: the key (never its secret), the session's CSRF token."""

    key: ApiKey
    csrf: str
    sid: str

    @property
    def user(self) -> str:
        return self.key.user_id

    @property
    def can_write(self) -> bool:
        return "write" in self.key.scopes


# ---- what the pages compute --------------------------------------------------
def salience_colour(salience: float) -> str:
    """0 is grey; 1..10 from pale yellow to deep red."""
    if salience <= 0:
        return "#cfd4da"
    s = min(10.0, salience)
    return f"hsl({int(52 - 5 * s)}, 85%, {int(82 - 4 * s)}%)"


@dataclass(frozen=True)
class Block:
    x: float
    w: float
    episode: EpisodeView | None  # None: the open episode
    colour: str
    label: str


@dataclass(frozen=True)
class Lane:
    stream_id: str
    blocks: list[Block]
    gaps: list[tuple[float, str]]  # x of a compressed gap, its real length
    width: float


def _span(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} d"


def timeline_lanes(
    episodes: Sequence[EpisodeView], open_turns: dict[str, int], width: float = 1100.0
) -> list[Lane]:
    """One lane per stream: episodes along time, each as wide as it lasted
    (at least 10 px), a gap over 30 px drawn as a marked 30 px break; the
    open episode (turns past the last cut) dashed at the end."""
    streams = sorted({e.stream_id for e in episodes} | {s for s, n in open_turns.items() if n})
    lanes = []
    for stream in streams:
        eps = sorted((e for e in episodes if e.stream_id == stream), key=lambda e: e.started_at)
        durations = [max(1.0, (e.ended_at - e.started_at).total_seconds()) for e in eps]
        gaps = [
            max(0.0, (b.started_at - a.ended_at).total_seconds())
            for a, b in zip(eps, eps[1:], strict=False)
        ]
        open_w = 60.0 if open_turns.get(stream) else 0.0
        room = width - open_w - 30.0 * len(gaps) - 10.0 * len(eps)
        scale = max(room, 100.0) / max(sum(durations), 1.0)
        blocks: list[Block] = []
        marks: list[tuple[float, str]] = []
        x = 0.0
        for i, (e, d) in enumerate(zip(eps, durations, strict=True)):
            if i:
                g = gaps[i - 1] * scale
                if g > 30.0:
                    marks.append((x + 15.0, _span(gaps[i - 1])))
                x += min(g, 30.0)
            w = max(10.0, d * scale)
            blocks.append(Block(x, w, e, salience_colour(e.salience), e.reason))
            x += w
        if open_w:
            x += 4.0
            blocks.append(Block(x, open_w, None, "none", f"open · {open_turns[stream]} turns"))
            x += open_w
        lanes.append(Lane(stream, blocks, marks, max(x, 1.0)))
    return lanes


def sort_facts(facts: list[FactView], key: str, desc: bool) -> list[FactView]:
    def k(f: FactView) -> Any:
        v = getattr(f, key)
        return v.lower() if isinstance(v, str) else v

    return sorted(facts, key=k, reverse=desc)


def parse_day(value: str | None) -> datetime | None:
    """A date (YYYY-MM-DD) or ISO 8601 time, as UTC; None when empty."""
    if not value:
        return None
    v = value.strip()
    at = datetime.fromisoformat(v[:-1] + "+00:00" if v.endswith("Z") else v)
    if len(v) == 10:  # a day: the end of it
        at = at.replace(hour=23, minute=59, second=59)
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def _fmt(at: datetime | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    return at.strftime(fmt) if at else ""


def _num(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}f}"


def _short(ident: str | None, n: int = 12) -> str:
    return (ident or "")[:n]


def viewer(request: Request) -> Viewer:
    """The session's key, verified again on every page; else to the login form."""
    memory: Memory = request.app.state.memory
    sessions: Sessions = request.app.state.ui_sessions
    sid = request.cookies.get(COOKIE)
    s = sessions.get(sid)
    key = memory.verify_key(s.secret) if s else None
    if s is None or sid is None or key is None or "read" not in key.scopes:
        sessions.close(sid)
        raise _LoginNeeded()
    return Viewer(key, s.csrf, sid)


Who = Annotated[Viewer, Depends(viewer)]


# ---- the router ----------------------------------------------------------------
def mount_ui(app: FastAPI, memory: Memory) -> None:
    """The browser's routes at /ui, its stylesheet at /ui/static."""
    sessions = app.state.ui_sessions = Sessions()
    app.state.memory = memory
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(fmt=_fmt, num=_num, short=_short, colour=salience_colour)
    app.mount("/ui/static", StaticFiles(directory=HERE / "static"), name="ui-static")

    def page(name: str, who: Viewer | None, http_status: int = 200, **ctx: Any) -> HTMLResponse:
        html = env.get_template(name).render(who=who, page=name.removesuffix(".html"), **ctx)
        return HTMLResponse(
            html,
            status_code=http_status,
            headers={
                "Cache-Control": "no-store",
                "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; "
                "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'",
                "Referrer-Policy": "no-referrer",
                "X-Content-Type-Options": "nosniff",
            },
        )

    def missing(who: Viewer, kind: str) -> HTMLResponse:
        return page("error.html", who, 404, message=f"No such {kind} for this user.")

    @app.exception_handler(_LoginNeeded)
    async def _login(request: Request, _: _LoginNeeded) -> Response:
        r = RedirectResponse("/ui/login", status_code=303)
        r.delete_cookie(COOKIE, path="/ui")
        return r

    router = APIRouter(prefix="/ui", include_in_schema=False)

    @router.get("")
    @router.get("/")
    def root() -> RedirectResponse:
        return RedirectResponse("/ui/overview", status_code=303)

    @router.get("/login")
    def login_form(request: Request) -> HTMLResponse:
        return page("login.html", None, error=None)

    @router.post("/login")
    def login(key: Annotated[str, Form(max_length=200)]) -> Response:
        found = memory.verify_key(key.strip())
        if found is None or "read" not in found.scopes:
            return page("login.html", None, 401, error="That key is not valid for reading.")
        r = RedirectResponse("/ui/overview", status_code=303)
        r.set_cookie(
            COOKIE,
            sessions.open(key.strip()),
            max_age=SESSION_TTL_S,
            path="/ui",
            httponly=True,
            samesite="strict",
        )
        return r

    @router.post("/logout")
    def logout(request: Request) -> Response:
        sessions.close(request.cookies.get(COOKIE))
        r = RedirectResponse("/ui/login", status_code=303)
        r.delete_cookie(COOKIE, path="/ui")
        return r

    @router.get("/overview")
    def overview(who: Who) -> HTMLResponse:
        streams = memory.status(who.user)
        facts = memory.facts(who.user, include_inactive=True)
        counts = {s: sum(1 for f in facts if f.status == s) for s in FACT_STATUSES}
        return page(
            "overview.html",
            who,
            streams=streams,
            facts=counts,
            episodes=sum(s.episodes for s in streams),
            reflections=len(memory.reflections(who.user)),
            turns=sum(s.raw_turns for s in streams),
            backlog=sum(s.unprocessed_turns for s in streams),
            failed=[s for s in streams if s.last_run_state and s.last_run_state != "Completed"],
            usage=memory.usage(who.user),
        )

    @router.get("/timeline")
    def timeline(who: Who) -> HTMLResponse:
        eps = memory.episodes(who.user)
        status = memory.status(who.user)
        open_turns = {s.stream_id: s.open_episode_turns for s in status}
        return page(
            "timeline.html",
            who,
            lanes=timeline_lanes(eps, open_turns),
            episodes=eps[::-1],
            status=status,
            reasons=sorted({e.reason for e in eps}),
        )

    @router.get("/episodes/{episode_id}")
    def episode(episode_id: str, who: Who) -> HTMLResponse:
        try:
            ep = memory.episode(who.user, episode_id)
        except NotFoundError:
            return missing(who, "episode")
        stored = memory.rt.episodes.by_ids(who.user, [ep.episode_id])
        strength = stored[0].strength if stored else 1.0
        recalls = stored[0].recall_count if stored else 0
        rationale = stored[0].salience_rationale if stored else ""
        facts = [
            f
            for f in memory.facts(who.user, include_inactive=True)
            if ep.episode_id in f.source_episode_ids
        ]
        signals = sorted(ep.signal_scores.items(), key=lambda kv: -abs(kv[1]))
        top = max((abs(v) for _, v in signals), default=1.0) or 1.0
        return page(
            "episode.html",
            who,
            ep=ep,
            signals=[(k, v, abs(v) / top) for k, v in signals],
            facts=facts,
            decayed=min(10.0, ep.salience * strength),
            strength=strength,
            recalls=recalls,
            rationale=rationale,
        )

    @router.get("/facts")
    def facts(who: Who, filt: Annotated[FactFilter, Query()]) -> HTMLResponse:
        error = None
        try:
            when = parse_day(filt.as_of)
        except ValueError:
            when, error = None, f"{filt.as_of!r} is not a date (YYYY-MM-DD)"
        rows = memory.facts(who.user, as_of=when, include_inactive=True)
        if filt.status in FACT_STATUSES and when is None:
            rows = [f for f in rows if f.status == filt.status]
        if filt.q:
            rows = [f for f in rows if filt.q.lower() in f.text.lower()]
        sort = filt.sort if filt.sort in FACT_SORTS else "valid_from"
        rows = sort_facts(rows, sort, filt.desc)
        return page(
            "facts.html",
            who,
            facts=rows,
            filt=filt,
            error=error,
            statuses=("all", *FACT_STATUSES),
            sorts=FACT_SORTS,
        )

    @router.get("/facts/{fact_id}")
    def fact(
        fact_id: str, who: Who, done: Annotated[str, Query(max_length=20)] = ""
    ) -> HTMLResponse:
        try:  # the fact itself: its history starts at the fact it superseded
            shown = memory.fact(who.user, fact_id)
        except NotFoundError:
            return missing(who, "fact")
        history = memory.fact_history(who.user, shown.fact_id)
        done_text = {
            "invalidate": "Invalidated.",
            "restore": "Restored.",
            "reword": "Reworded: this fact supersedes the old wording.",
        }.get(done)
        return page("fact.html", who, fact=shown, history=history, done=done_text)

    @router.get("/search")
    def search(
        who: Who,
        q: Annotated[str, Query(max_length=4000)] = "",
        k: Annotated[int, Query(ge=1, le=100)] = 10,
        kinds: Annotated[list[str] | None, Query()] = None,
    ) -> HTMLResponse:
        chosen = [x for x in (kinds or ["turns", "facts", "reflections"]) if x]
        hits: list[Hit] = []
        took_ms = None
        error = None
        if q.strip():
            t0 = time.perf_counter()
            try:
                # a person browsing is not the agent recalling: no recall is noted
                hits = memory.search(who.user, q, k=k, kinds=chosen, record=False)
            except ValueError as e:
                error = str(e)
            took_ms = (time.perf_counter() - t0) * 1000
        return page(
            "search.html", who, q=q, k=k, kinds=chosen, hits=hits, took_ms=took_ms, error=error
        )

    @router.get("/reflections")
    def reflections(who: Who, archived: bool = False) -> HTMLResponse:
        rows = memory.reflections(who.user, include_archived=archived)
        return page("reflections.html", who, reflections=rows, archived=archived)

    # ---- actions: a confirmation page, then a POST with the CSRF token ----
    @router.get("/confirm")
    def confirm(
        who: Who,
        action: Annotated[str, Query(max_length=20)],
        target: Annotated[str, Query(max_length=128)] = "",
    ) -> HTMLResponse:
        if action not in ACTIONS:
            return page("error.html", who, 400, message="No such action.")
        text, kind = ACTIONS[action]
        subject: Any = None
        try:
            if kind == "fact":
                subject = memory.fact(who.user, target)
            elif kind == "episode":
                subject = memory.episode(who.user, target)
            elif kind == "turn":
                subject = next(iter(memory.rt.raw.by_ids(who.user, [target])), None)
                if subject is None:
                    return missing(who, "turn")
        except NotFoundError:
            return missing(who, kind)
        back = {
            "fact": f"/ui/facts/{target}",
            "episode": f"/ui/episodes/{target}",
            "turn": "/ui/timeline",
        }.get(kind, "/ui/overview")
        return page(
            "confirm.html", who, action=action, target=target, text=text, kind=kind,
            subject=subject, back=back,
        )  # fmt: skip

    @router.post("/act")
    def act(
        request: Request,
        who: Who,
        action: Annotated[str, Form(max_length=20)],
        csrf: Annotated[str, Form(max_length=100)],
        target: Annotated[str, Form(max_length=128)] = "",
        typed: Annotated[str, Form(max_length=512)] = "",
        wording: Annotated[str, Form(max_length=MAX_MERGE_TEXT)] = "",
    ) -> Response:
        if not secrets.compare_digest(csrf, who.csrf):
            return page("error.html", who, 403, message="This form expired: open it again.")
        if not who.can_write:
            return page("error.html", who, 403, message="This key lacks the 'write' scope.")
        actor = f"ui:{who.key.key_id}"
        do: dict[str, Callable[[], Any]] = {
            "invalidate": lambda: memory.invalidate_fact(who.user, target, actor=actor),
            "restore": lambda: memory.restore_fact(who.user, target, actor=actor),
            "reword": lambda: memory.reword_fact(who.user, target, wording, actor=actor),
            "forget-fact": lambda: memory.forget(who.user, fact=target, actor=actor),
            "forget-turn": lambda: memory.forget(who.user, turn=target, actor=actor),
            "forget-episode": lambda: memory.forget(who.user, episode=target, actor=actor),
            "forget-user": lambda: memory.forget(who.user, actor=actor),
        }
        if action not in do:
            return page("error.html", who, 400, message="No such action.")
        if action == "forget-user" and typed != who.user:
            return page("error.html", who, 400, message="The user id typed did not match.")
        try:
            memory.rt.recalls.flush()  # noted recalls written before a forget compacts
            out = do[action]()
        except NotFoundError:
            return missing(who, ACTIONS[action][1])
        except ValueError as e:  # a reword's empty text, a fact no longer active
            return page("error.html", who, 400, message=str(e))
        except BusyError as e:  # a consolidation of this user held on: nothing done
            return page("error.html", who, 409, message=f"Nothing was done: {e}. Try again.")
        if action in ("invalidate", "restore", "reword"):
            return RedirectResponse(f"/ui/facts/{out.fact_id}?done={action}", status_code=303)
        if action == "forget-user":
            sessions.close(who.sid)  # the key itself is gone with the user
            r = page("forgotten.html", None, receipt=out, action=action)
            r.delete_cookie(COOKIE, path="/ui")
            return r
        return page("forgotten.html", who, receipt=out, action=action)

    @router.get("/{rest:path}")  # last: any other address under /ui
    def nowhere(who: Who, rest: str) -> HTMLResponse:
        return page("error.html", who, 404, message="No such page.")

    app.include_router(router)
    json_invalid = app.exception_handlers[RequestValidationError]

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: Exception) -> Response:
        # a page's bad address (k=-1) answers a page; the API's, its JSON
        if not request.url.path.startswith("/ui") or not isinstance(exc, RequestValidationError):
            answer = json_invalid(request, exc)
            return await answer if inspect.isawaitable(answer) else answer
        try:
            who: Viewer | None = viewer(request)
        except _LoginNeeded:
            who = None
        said = "; ".join(f"{e['loc'][-1]}: {e['msg']}" for e in exc.errors())
        return page("error.html", who, 400, message=f"Not a valid request ({said}).")
