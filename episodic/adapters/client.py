"""A Python client for `episodic api`, sync (`Client`) and async
(`AsyncClient`), with the verbs and the typed results of the in-process
`Memory` (episodic/service/views.py), so code moves between the two by
changing one line:

    with Memory(Settings(home="./agent-memory")) as memory:      # in process
    with Client("http://127.0.0.1:8700", key=KEY) as memory:     # over HTTP

Every verb takes the `user_id` first, as `Memory`'s do. A key belongs to one
user and the server always acts for the key's user, so a `user_id` that is
not the key's raises `PermissionError` before any request (the client asks
the server whose key it is once, `GET /v1/me`). Errors are `Memory`'s: a
missing (or another user's) id raises `NotFoundError`, a bad argument
`ValueError`; a missing or invalid key `PermissionError`; any other failed
request `httpx.HTTPStatusError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

import httpx
from pydantic import TypeAdapter

from episodic.closing import Closing
from episodic.errors import BusyError, NotFoundError
from episodic.service import views

T = TypeVar("T")
H = TypeVar("H", httpx.Client, httpx.AsyncClient)
TIMEOUT_S = 300.0  # consolidate runs the whole flow before it answers
MAX_EPISODES = 10_000  # the API's largest page of episodes

_hits = TypeAdapter(list[views.Hit])
_facts = TypeAdapter(list[views.FactView])
_events = TypeAdapter(list[views.FactEvent])
_episodes = TypeAdapter(list[views.EpisodeView])
_reflections = TypeAdapter(list[views.ReflectionView])
_status = TypeAdapter(list[views.StreamStatus])


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request of a verb and how its JSON becomes the verb's result."""

    method: str
    path: str
    parse: Callable[[Any], T]
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    kind: str = ""  # what a 404 is about (fact, episode, turn, ...)
    ident: str = ""


def _check(r: httpx.Response, call: Call[Any]) -> None:
    if r.is_success:
        return
    try:
        detail = r.json().get("detail", r.text)
    except ValueError:
        detail = r.text
    if r.status_code == 404:
        raise NotFoundError(call.kind or "item", call.ident, "not stored for this key's user")
    if r.status_code in (401, 403):
        raise PermissionError(f"{r.status_code}: {detail}")
    if r.status_code in (400, 422):
        raise ValueError(f"{r.status_code}: {detail}")
    if r.status_code == 409:  # Memory's own error: a consolidation of the user held on
        raise BusyError(str(detail))
    r.raise_for_status()


def _consolidated(body: Any) -> dict[str, Any]:
    """`Memory.consolidate`'s answer: the run's summary, or the queued deployment run."""
    if body.get("mode") == "deployment":
        return {"mode": "deployment", "run_id": body.get("run_id")}
    return dict(body.get("summary") or {})


class _Verbs:
    """The requests behind each verb, shared by the sync and async clients."""

    def __init__(self, url: str, key: str, user_id: str | None) -> None:
        if not key:
            raise ValueError("a key is needed (`episodic keys create --user USER`)")
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {key}"}
        self.user_id = user_id  # the key's user, asked once

    def me(self) -> Call[str]:
        return Call("GET", "/v1/me", lambda b: str(b["user_id"]))

    def add(
        self,
        turns: Sequence[Mapping[str, Any] | Any],
        stream_id: str,
        idempotency_key: str | None,
    ) -> Call[views.AddReceipt]:
        body = [
            {"stream_id": stream_id, **t} if isinstance(t, Mapping) and "stream_id" not in t else t
            for t in turns
        ]
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        return Call(
            "POST",
            "/v1/turns",
            views.AddReceipt.model_validate,
            json={"turns": body},
            headers=headers,
        )

    def search(self, query: str, k: int, kinds: Sequence[str]) -> Call[list[views.Hit]]:
        params = {"q": query, "k": k, "kinds": ",".join(kinds)}
        return Call("GET", "/v1/search", _hits.validate_python, params=params)

    def facts(self, as_of: datetime | None, include_inactive: bool) -> Call[list[views.FactView]]:
        params: dict[str, Any] = {"all": "true" if include_inactive else "false"}
        if as_of is not None:
            params["as_of"] = as_of.isoformat()
        return Call("GET", "/v1/facts", _facts.validate_python, params=params)

    def fact_history(self, fact_id: str) -> Call[list[views.FactEvent]]:
        return Call(
            "GET", f"/v1/facts/{_seg(fact_id)}/history", _events.validate_python,
            kind="fact", ident=fact_id,
        )  # fmt: skip

    def correct(self, fact_id: str, verb: str) -> Call[views.FactView]:
        return Call(
            "POST", f"/v1/facts/{_seg(fact_id)}/{verb}", views.FactView.model_validate,
            kind="fact", ident=fact_id,
        )  # fmt: skip

    def reword(self, fact_id: str, text: str) -> Call[views.FactView]:
        return Call(
            "POST", f"/v1/facts/{_seg(fact_id)}/reword", views.FactView.model_validate,
            json={"text": text}, kind="fact", ident=fact_id,
        )  # fmt: skip

    def episodes(self, stream_id: str | None, limit: int | None) -> Call[list[views.EpisodeView]]:
        params: dict[str, Any] = {"limit": MAX_EPISODES if limit is None else limit}
        if stream_id is not None:
            params["stream"] = stream_id
        # the API answers newest first; Memory.episodes oldest first
        return Call(
            "GET", "/v1/episodes", lambda b: _episodes.validate_python(b)[::-1], params=params
        )

    def episode(self, episode_id: str) -> Call[views.EpisodeDetail]:
        return Call(
            "GET", f"/v1/episodes/{_seg(episode_id)}", views.EpisodeDetail.model_validate,
            kind="episode", ident=episode_id,
        )  # fmt: skip

    def reflections(self, include_archived: bool) -> Call[list[views.ReflectionView]]:
        params = {"all": "true" if include_archived else "false"}
        return Call("GET", "/v1/reflections", _reflections.validate_python, params=params)

    def status(self) -> Call[list[views.StreamStatus]]:
        return Call("GET", "/v1/status", _status.validate_python)

    def ingest_status(self, ingest_id: str) -> Call[views.IngestStatus]:
        return Call(
            "GET", f"/v1/ingests/{_seg(ingest_id)}", views.IngestStatus.model_validate,
            kind="ingest", ident=ingest_id,
        )  # fmt: skip

    def consolidate(self, flush: bool) -> Call[dict[str, Any]]:
        params = {"flush": "true" if flush else "false"}
        return Call("POST", "/v1/consolidate", _consolidated, params=params)

    def forget(
        self, turn: str | None, episode: str | None, fact: str | None
    ) -> Call[views.ForgetReceipt]:
        asked = views.forget_target(turn=turn, episode=episode, fact=fact)
        if not asked:
            return Call("DELETE", "/v1/memory", views.ForgetReceipt.model_validate, kind="user")
        kind, ident = asked[0]
        return Call(
            "DELETE", f"/v1/{kind}s/{_seg(ident)}", views.ForgetReceipt.model_validate,
            kind=kind, ident=ident,
        )  # fmt: skip

    def request(self, call: Call[Any]) -> dict[str, Any]:
        """The transport's `request(...)` arguments for `call`, the key's header on."""
        return {
            "method": call.method,
            "url": call.path,
            "params": call.params or None,
            "json": call.json,
            "headers": {**self.headers, **call.headers},
        }

    def answer(self, call: Call[T], r: httpx.Response) -> T:
        """The verb's result from the transport's response (or the error it means)."""
        _check(r, call)
        return call.parse(r.json())

    def check_user(self, user_id: str | None, known: str) -> None:
        if user_id is not None and user_id != known:
            raise PermissionError(
                f"this key belongs to user {known!r}, not {user_id!r}: a key acts for its user only"
            )


def _seg(ident: str) -> str:
    """An id as one path segment (an id never holds '/'; a hostile one stays one segment)."""
    from urllib.parse import quote

    return quote(ident, safe="")


class _Connection(Generic[H]):
    """What the sync and async clients share: the verbs' requests and one
    transport `H` (an httpx.Client or httpx.AsyncClient), theirs or the caller's."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8700",
        *,
        key: str,
        timeout: float = TIMEOUT_S,
        http: H | None = None,
    ) -> None:
        self._v = _Verbs(url, key, None)
        self._own = http is None
        self.http: H = http or self._open(self._v.url, timeout)

    def _open(self, url: str, timeout: float) -> H:
        raise NotImplementedError


class Client(_Connection[httpx.Client], Closing):
    """`episodic api` over HTTP, with `Memory`'s verbs and typed results.

    `url` is the server (`http://127.0.0.1:8700`), `key` an API key; `http`
    an httpx.Client to send through instead of a new one (for example
    FastAPI's TestClient over the app in process)."""

    def _open(self, url: str, timeout: float) -> httpx.Client:
        return httpx.Client(base_url=url, timeout=timeout)

    def close(self) -> None:
        if self._own:
            self.http.close()

    def _run(self, call: Call[T]) -> T:
        return self._v.answer(call, self.http.request(**self._v.request(call)))

    def _as(self, user_id: str | None) -> None:
        if user_id is None:
            return
        if self._v.user_id is None:
            self._v.user_id = self._run(self._v.me())
        self._v.check_user(user_id, self._v.user_id)

    @property
    def user_id(self) -> str:
        """The key's user."""
        if self._v.user_id is None:
            self._v.user_id = self._run(self._v.me())
        return self._v.user_id

    # ---- Memory's verbs ----
    def add(
        self,
        user_id: str,
        turns: Sequence[Mapping[str, Any] | Any],
        *,
        stream_id: str = "api",
        idempotency_key: str | None = None,
    ) -> views.AddReceipt:
        self._as(user_id)
        return self._run(self._v.add(turns, stream_id, idempotency_key))

    def search(
        self, user_id: str, query: str, *, k: int = 10, kinds: Sequence[str] = views.HIT_KINDS
    ) -> list[views.Hit]:
        self._as(user_id)
        return self._run(self._v.search(query, k, kinds))

    def facts(
        self, user_id: str, *, as_of: datetime | None = None, include_inactive: bool = False
    ) -> list[views.FactView]:
        self._as(user_id)
        return self._run(self._v.facts(as_of, include_inactive))

    def fact_history(self, user_id: str, fact_id: str) -> list[views.FactEvent]:
        self._as(user_id)
        return self._run(self._v.fact_history(fact_id))

    history = fact_history

    def invalidate_fact(self, user_id: str, fact_id: str) -> views.FactView:
        self._as(user_id)
        return self._run(self._v.correct(fact_id, "invalidate"))

    def restore_fact(self, user_id: str, fact_id: str) -> views.FactView:
        self._as(user_id)
        return self._run(self._v.correct(fact_id, "restore"))

    def reword_fact(self, user_id: str, fact_id: str, text: str) -> views.FactView:
        self._as(user_id)
        return self._run(self._v.reword(fact_id, text))

    def episodes(
        self, user_id: str, *, stream_id: str | None = None, limit: int | None = None
    ) -> list[views.EpisodeView]:
        self._as(user_id)
        return self._run(self._v.episodes(stream_id, limit))

    def episode(self, user_id: str, episode_id: str) -> views.EpisodeDetail:
        self._as(user_id)
        return self._run(self._v.episode(episode_id))

    def reflections(
        self, user_id: str, *, include_archived: bool = False
    ) -> list[views.ReflectionView]:
        self._as(user_id)
        return self._run(self._v.reflections(include_archived))

    def status(self, user_id: str | None = None) -> list[views.StreamStatus]:
        self._as(user_id)
        return self._run(self._v.status())

    def ingest_status(self, user_id: str, ingest_id: str) -> views.IngestStatus:
        self._as(user_id)
        return self._run(self._v.ingest_status(ingest_id))

    def consolidate(self, user_id: str | None = None, *, flush: bool = False) -> dict[str, Any]:
        self._as(user_id)
        return self._run(self._v.consolidate(flush))

    def forget(
        self,
        user_id: str,
        *,
        turn: str | None = None,
        episode: str | None = None,
        fact: str | None = None,
    ) -> views.ForgetReceipt:
        call = self._v.forget(turn, episode, fact)  # refused before anything is sent
        self._as(user_id)
        return self._run(call)


class AsyncClient(_Connection[httpx.AsyncClient]):
    """`Client`, async: the same verbs, awaited."""

    def _open(self, url: str, timeout: float) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=url, timeout=timeout)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        et: type[BaseException] | None,
        ev: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._own:
            await self.http.aclose()

    async def _run(self, call: Call[T]) -> T:
        return self._v.answer(call, await self.http.request(**self._v.request(call)))

    async def _as(self, user_id: str | None) -> None:
        if user_id is None:
            return
        if self._v.user_id is None:
            self._v.user_id = await self._run(self._v.me())
        self._v.check_user(user_id, self._v.user_id)

    async def user(self) -> str:
        """The key's user."""
        if self._v.user_id is None:
            self._v.user_id = await self._run(self._v.me())
        return self._v.user_id

    async def add(
        self,
        user_id: str,
        turns: Sequence[Mapping[str, Any] | Any],
        *,
        stream_id: str = "api",
        idempotency_key: str | None = None,
    ) -> views.AddReceipt:
        await self._as(user_id)
        return await self._run(self._v.add(turns, stream_id, idempotency_key))

    async def search(
        self, user_id: str, query: str, *, k: int = 10, kinds: Sequence[str] = views.HIT_KINDS
    ) -> list[views.Hit]:
        await self._as(user_id)
        return await self._run(self._v.search(query, k, kinds))

    async def facts(
        self, user_id: str, *, as_of: datetime | None = None, include_inactive: bool = False
    ) -> list[views.FactView]:
        await self._as(user_id)
        return await self._run(self._v.facts(as_of, include_inactive))

    async def fact_history(self, user_id: str, fact_id: str) -> list[views.FactEvent]:
        await self._as(user_id)
        return await self._run(self._v.fact_history(fact_id))

    history = fact_history

    async def invalidate_fact(self, user_id: str, fact_id: str) -> views.FactView:
        await self._as(user_id)
        return await self._run(self._v.correct(fact_id, "invalidate"))

    async def restore_fact(self, user_id: str, fact_id: str) -> views.FactView:
        await self._as(user_id)
        return await self._run(self._v.correct(fact_id, "restore"))

    async def reword_fact(self, user_id: str, fact_id: str, text: str) -> views.FactView:
        await self._as(user_id)
        return await self._run(self._v.reword(fact_id, text))

    async def episodes(
        self, user_id: str, *, stream_id: str | None = None, limit: int | None = None
    ) -> list[views.EpisodeView]:
        await self._as(user_id)
        return await self._run(self._v.episodes(stream_id, limit))

    async def episode(self, user_id: str, episode_id: str) -> views.EpisodeDetail:
        await self._as(user_id)
        return await self._run(self._v.episode(episode_id))

    async def reflections(
        self, user_id: str, *, include_archived: bool = False
    ) -> list[views.ReflectionView]:
        await self._as(user_id)
        return await self._run(self._v.reflections(include_archived))

    async def status(self, user_id: str | None = None) -> list[views.StreamStatus]:
        await self._as(user_id)
        return await self._run(self._v.status())

    async def ingest_status(self, user_id: str, ingest_id: str) -> views.IngestStatus:
        await self._as(user_id)
        return await self._run(self._v.ingest_status(ingest_id))

    async def consolidate(
        self, user_id: str | None = None, *, flush: bool = False
    ) -> dict[str, Any]:
        await self._as(user_id)
        return await self._run(self._v.consolidate(flush))

    async def forget(
        self,
        user_id: str,
        *,
        turn: str | None = None,
        episode: str | None = None,
        fact: str | None = None,
    ) -> views.ForgetReceipt:
        call = self._v.forget(turn, episode, fact)  # refused before anything is sent
        await self._as(user_id)
        return await self._run(call)
