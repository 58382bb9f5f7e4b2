"""A response cache on disk, so that rerunning a flow costs no model call.

The key is a SHA-256 over the provider name, the model, the messages, the
response model's JSON schema and a fingerprint of the context (which the
validators and the offline answer may read). One JSON file per key under
`cache_dir/<key[:2]>/<key>.json` (under `cache_dir/users/<hash of the user>/`
while a step runs for one user, `owned_by`, so forgetting a user removes
that user's entries and no one else's), written to a temporary file and renamed,
so a crash never leaves half an entry; an unreadable or no longer valid
entry is a miss. Validated answers are stored, and so is an answer that
never fit the schema (the model's answer to that exact prompt, at
temperature 0): a rerun raises the same schema error without a call, so its
offline fallback costs nothing either. Transient failures (timeouts, 5xx)
are never cached: a rerun asks again.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from pydantic import BaseModel, ValidationError

from episodic.errors import LLMSchemaError
from episodic.llm.accounting import record_cached
from episodic.llm.base import OWNER, BaseProvider, LLMProvider, Message
from episodic.llm.validate import coerce

T = TypeVar("T", bound=BaseModel)


@contextmanager
def owned_by(user_id: str) -> Iterator[None]:
    """Within the block, cached answers are kept under `user_id`'s folder."""
    token = OWNER.set(user_id)
    try:
        yield
    finally:
        OWNER.reset(token)


P = ParamSpec("P")
R = TypeVar("R")


def per_user(fn: Callable[P, R]) -> Callable[P, R]:
    """A step whose `user_id` argument owns the answers it caches."""
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def step(*args: P.args, **kwargs: P.kwargs) -> R:
        with owned_by(str(sig.bind_partial(*args, **kwargs).arguments["user_id"])):
            return fn(*args, **kwargs)

    return step


def user_folder(cache_dir: Path | str, user_id: str) -> Path:
    """Where a user's cached answers live (a hash: the id never becomes a path)."""
    digest = hashlib.sha256(user_id.encode()).hexdigest()[:24]
    return Path(cache_dir) / "users" / digest


def fingerprint(context: dict[str, Any] | None) -> str:
    """A stable digest of a context; values that are not JSON are taken by `str`."""
    text = json.dumps(context or {}, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def cache_key(
    provider: str,
    model: str,
    messages: list[Message],
    response_model: type[BaseModel],
    context: dict[str, Any] | None,
) -> str:
    material = {
        "provider": provider,
        "model": model,
        "messages": messages,
        "schema": response_model.model_json_schema(),
        "context": fingerprint(context),
    }
    text = json.dumps(material, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class ResponseCache:
    """Validated answers on disk, one JSON file per key."""

    def __init__(self, cache_dir: Path | str) -> None:
        self.cache_dir = Path(cache_dir)

    def _path(self, key: str) -> Path:
        owner = OWNER.get()
        base = self.cache_dir if owner is None else user_folder(self.cache_dir, owner)
        return base / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        entry = self._entry(key)
        value = entry.get("value") if entry else None
        return value if isinstance(value, dict) else None

    def schema_error(self, key: str) -> str | None:
        """The reason the model's answer to this key never fit the schema."""
        entry = self._entry(key)
        reason = entry.get("schema_error") if entry else None
        return reason if isinstance(reason, str) else None

    def _entry(self, key: str) -> dict[str, Any] | None:
        try:
            entry = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return entry if isinstance(entry, dict) else None

    def put(self, key: str, entry: dict[str, Any], *, meta: dict[str, Any]) -> None:
        """Store {"value": ...} or {"schema_error": ...} under key."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps({**meta, **entry}, ensure_ascii=False, sort_keys=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def __len__(self) -> int:
        return sum(1 for _ in self.cache_dir.rglob("*.json"))


class CachedProvider(BaseProvider):
    """Wraps a provider; a hit costs no call and counts as `usage.cached`.

    It shares the inner provider's `usage`, so one object sums calls, tokens
    and cache hits.
    """

    def __init__(self, inner: LLMProvider, cache_dir: Path | str) -> None:
        self.inner = inner
        self.cache = ResponseCache(cache_dir)
        self.name = inner.name
        self.model = inner.model
        self.usage = inner.usage

    def __repr__(self) -> str:
        return f"CachedProvider({self.inner!r}, cache_dir={str(self.cache.cache_dir)!r})"

    def _answer(
        self, messages: list[Message], response_model: type[T], context: dict[str, Any]
    ) -> T:
        key = cache_key(self.name, self.model, messages, response_model, context)
        refused = self.cache.schema_error(key)
        if refused is not None:
            record_cached(self.usage)
            raise LLMSchemaError(self.name, self.model, f"{refused} (cached)")
        hit = self.cache.get(key)
        if hit is not None:
            try:
                value = coerce(hit, response_model, context)
            except (ValidationError, TypeError):
                pass  # a validator reads something the key did not capture: ask again
            else:
                record_cached(self.usage)
                return value
        meta = {"provider": self.name, "model": self.model, "schema": response_model.__name__}
        try:
            value = self.inner.structured(messages, response_model, context=context)
        except LLMSchemaError as exc:
            self.cache.put(key, {"schema_error": exc.reason}, meta=meta)
            raise
        self.cache.put(key, {"value": value.model_dump(mode="json")}, meta=meta)
        return value
