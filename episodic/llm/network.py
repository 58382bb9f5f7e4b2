"""What the Anthropic and OpenAI-compatible providers share: instructor, retries, accounting.

The SDKs and instructor are imported lazily, on the first call, so that
`import episodic` stays light and works without them.

Three instructor details are handled here on purpose:

- Tokens are counted from every raw response through a per-call
  `completion:response` hook, read as integers at once. instructor's
  `create_with_completion` returns only the final attempt's response, so the
  tokens spent on re-asked answers would be lost; and instructor later mutates
  each response's usage into a running total.
- instructor renders messages as Jinja templates whenever a validation context
  is given. Episode text may contain `{{`, `{%` or `{#` (code, templates), so
  each message is wrapped in a `{% raw %}` block first (`protect`), with every
  `{%` inside written as an expression so no `endraw` can close it early. What
  instructor still does to the text: it dedents it (a common indentation and
  whitespace-only lines go) and Jinja turns CRLF into LF. A falsy context dict
  would avoid templating entirely but breaks validators that read
  `info.context or {}`, so it was rejected.
- The SDK's own retries are off (`max_retries=0`); `Retrier` decides, and
  instructor's `max_retries` is only its schema re-ask budget.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypedDict, TypeVar

from pydantic import BaseModel, SecretStr, ValidationError

from episodic.errors import LLMSchemaError
from episodic.llm.accounting import record_call, record_failure
from episodic.llm.base import BaseProvider, Message, Usage
from episodic.llm.retry import Failure, Retrier, RetryPolicy, parse_retry_after
from episodic.llm.validate import coerce

T = TypeVar("T", bound=BaseModel)
TRANSIENT_STATUS = frozenset({408, 409, 429})
_MAX_REASON = 400


def protect(text: str) -> str:
    """Jinja source that renders to `text` itself (see module docstring)."""
    return "{% raw %}" + text.replace("{%", "{% endraw %}{{ '{%' }}{% raw %}") + "{% endraw %}"


def protected(messages: list[Message]) -> list[Message]:
    """Every message's content through `protect`; for when a context is passed."""
    return [{**m, "content": protect(m["content"])} for m in messages]


class Patience(TypedDict, total=False):
    """How a network provider waits and retries (the same for every provider)."""

    timeout_s: float  # per request; default 30
    retries: int  # transient failures retried, and schema re-asks; default 3
    policy: RetryPolicy | None  # backoff; default: RetryPolicy(retries=retries)
    sleep: Callable[[float], None] | None  # for tests; default time.sleep


class InstructorProvider(BaseProvider):
    """Base of the network providers; subclasses build the client and call it."""

    name = "network"

    def __init__(
        self,
        model: str,
        *,
        api_key: SecretStr | str | None,
        base_url: str | None,
        max_tokens: int | None,
        timeout_s: float = 30.0,
        retries: int = 3,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must be a non-empty string")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        if max_tokens is not None and max_tokens <= 0:
            raise ValueError(f"max_tokens must be > 0, got {max_tokens}")
        self.max_tokens = max_tokens
        self.model = model
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.reasks = retries  # instructor's schema re-asks
        self.policy = policy or RetryPolicy(retries=retries)
        self.usage = Usage()
        self._key = api_key if isinstance(api_key, SecretStr) else SecretStr(api_key or "")
        self._retrier = Retrier(self.policy, sleep=sleep or time.sleep)
        self._instructor: Any = None
        self._build_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def __getstate__(self) -> dict[str, Any]:
        # The live client holds sockets and the key in its headers: rebuild it lazily.
        state = self.__dict__.copy()
        state["_instructor"] = None
        del state["_build_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._build_lock = threading.Lock()

    # -- subclass hooks ---------------------------------------------------
    def _sdk(self) -> ModuleType:
        raise NotImplementedError

    def _build(self) -> Any:
        """The instructor client over the SDK client."""
        raise NotImplementedError

    def _endpoint(self, client: Any) -> Callable[..., Any]:
        """instructor's `create` for this API."""
        raise NotImplementedError

    # `_arguments` gets the caller's messages; with a context it must pass the
    # templated ones through `protected` (instructor renders them).
    def _arguments(self, messages: list[Message], context: dict[str, Any] | None) -> dict[str, Any]:
        """The API's own arguments: its messages and sampling settings."""
        raise NotImplementedError

    def _tokens(self, response: Any) -> tuple[int, int]:
        raise NotImplementedError

    def _mend(self, response: Any) -> None:
        """Repair what a server sent before it is parsed (default: nothing)."""

    # -- the call ---------------------------------------------------------
    def _client(self) -> Any:
        with self._build_lock:  # one client (and connection pool) per provider
            if self._instructor is None:
                self._instructor = self._build()
            return self._instructor

    def _answer(
        self, messages: list[Message], response_model: type[T], context: dict[str, Any]
    ) -> T:
        from instructor.core.hooks import Hooks

        create = self._endpoint(self._client())
        ctx = context or None  # instructor templates the messages whenever it gets a context

        def on_response(response: Any) -> None:  # before instructor parses it
            record_call(self.usage, self.model, *self._tokens(response))
            self._mend(response)

        def attempt() -> T:
            hooks = Hooks()
            hooks.on("completion:response", on_response)
            value: T = create(
                model=self.model,
                response_model=response_model,
                max_retries=self.reasks,
                context=ctx,
                hooks=hooks,
                **self._arguments(list(messages), ctx),
            )
            return value

        try:
            value = self._retrier.run(attempt, self._classify, provider=self.name, model=self.model)
        except Exception:
            record_failure(self.usage)
            raise
        # instructor pins the raw response (and running usage) on the instance;
        # hand back a plain, freshly validated model instead.
        try:
            return coerce(value, response_model, context)
        except (ValidationError, TypeError) as exc:
            record_failure(self.usage)
            reason = self._scrub(f"answer failed re-validation: {exc}")
            raise LLMSchemaError(self.name, self.model, reason) from None

    # -- what an exception means -----------------------------------------
    def _scrub(self, text: str) -> str:
        key = self._key.get_secret_value()
        if key:
            text = text.replace(key, "***")
        text = " ".join(text.split())
        return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 3] + "..."

    def _classify(self, exc: Exception) -> Failure:
        from instructor.core import IncompleteOutputException, InstructorRetryException

        sdk = self._sdk()
        root: BaseException = exc
        failed = 0
        if isinstance(exc, InstructorRetryException):
            failed = len(exc.failed_attempts or [])
            root = exc.__cause__ or exc
        detail = self._scrub(f"{type(root).__name__}: {root}")
        if isinstance(root, sdk.APIStatusError):
            code = root.status_code
            if code in TRANSIENT_STATUS or code >= 500:
                after = parse_retry_after(root.response.headers)
                return Failure("transient", f"HTTP {code}: {detail}", after)
            return Failure("fatal", f"HTTP {code}: {detail}")
        if isinstance(root, sdk.APITimeoutError):
            return Failure("transient", f"timeout after {self.timeout_s}s")
        if isinstance(root, sdk.APIConnectionError):
            return Failure("transient", f"connection error: {detail}")
        if isinstance(root, IncompleteOutputException):
            return Failure("schema", f"answer cut off at max_tokens: {detail}")
        parse_errors = (ValidationError, json.JSONDecodeError, ValueError)
        if failed and isinstance(root, parse_errors):
            return Failure(
                "schema", f"answer never fit the schema after {failed} attempts: {detail}"
            )
        if isinstance(root, json.JSONDecodeError | sdk.APIResponseValidationError):
            # A 200 whose body is not the API's JSON: a proxy or server hiccup.
            return Failure("transient", f"malformed response body: {detail}")
        return Failure("fatal", f"unexpected error: {detail}")
