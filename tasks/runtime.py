"""The objects a worker process shares between task runs: one store, one
embedder, one LLM provider. Tasks take plain ids and look these up, so task
inputs stay small and hashable.

`get_runtime()` is the one way flows, tasks and commands reach them:

1. inside a `use_runtime(...)` block, the runtime it installed (innermost
   first), in every thread of the process. Tests and benchmarks point a flow
   at a temporary store this way, never by rewriting `os.environ`;
2. otherwise the process's runtime for the settings (by default
   `load_settings()`, the environment), built on first use and kept per
   (database, embedder, provider).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from episodic.config import Settings, load_settings
from episodic.stages import StageClock
from storage.db import Store, open_store
from storage.episodes import Episodes
from storage.facts import Facts
from storage.raw import RawLog
from storage.recalls import RecallLog
from storage.reflections import Reflections
from storage.state import Checkpoints
from storage.vectors import TurnVectors


@dataclass
class Runtime:
    """`provider` is built from the settings on first use, so commands that
    call no model (status, ingest, search) never need a model key; assigning
    it (tests, evaluations) replaces it."""

    settings: Settings
    store: Store
    embedder: Any
    _provider: Any = field(default=None, repr=False)
    raw: RawLog = field(init=False)
    episodes: Episodes = field(init=False)
    facts: Facts = field(init=False)
    reflections: Reflections = field(init=False)
    checkpoints: Checkpoints = field(init=False)
    vectors: TurnVectors = field(init=False)
    recalls: RecallLog = field(init=False)  # search's recall writes, off the query path
    user_locks: dict[str, threading.Lock] = field(default_factory=dict)
    stages: StageClock = field(default_factory=StageClock)
    _provider_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.raw = RawLog(self.store)
        self.episodes = Episodes(self.store)
        self.facts = Facts(self.store)
        self.reflections = Reflections(self.store)
        self.checkpoints = Checkpoints(self.store)
        self.vectors = TurnVectors(self.store)
        self.recalls = RecallLog(self.store)

    @property
    def provider(self) -> Any:
        with self._provider_lock:
            if self._provider is None:
                from episodic.llm.factory import make_provider

                self._provider = make_provider(self.settings)
            return self._provider

    @provider.setter
    def provider(self, value: Any) -> None:
        self._provider = value

    def lock_for(self, user_id: str) -> threading.Lock:
        return self.user_locks.setdefault(user_id, threading.Lock())


_lock = threading.RLock()
_runtimes: dict[tuple[str, str, str], Runtime] = {}
_installed: list[Runtime] = []  # use_runtime blocks, innermost last


def build_runtime(settings: Settings) -> Runtime:
    """A new runtime for `settings` (not kept: `get_runtime` keeps its own)."""
    from episodic.embed import make_embedder

    embedder = make_embedder(settings.embedder)
    store = open_store(settings, dim=embedder.dim)
    return Runtime(settings=settings, store=store, embedder=embedder)


def get_runtime(settings: Settings | None = None) -> Runtime:
    """The runtime of this process (see the module docstring): the one a
    `use_runtime` block installed when no `settings` are given, else the one
    kept for `settings` (default: the environment's)."""
    with _lock:
        if settings is None and _installed:
            return _installed[-1]
    s = settings or load_settings()
    key = (s.database_uri, s.embedder, s.llm_kind() + (s.llm_base_url or ""))
    with _lock:
        rt = _runtimes.get(key)
        if rt is None:
            rt = _runtimes[key] = build_runtime(s)
        return rt


@contextmanager
def use_runtime(target: Runtime | Settings) -> Iterator[Runtime]:
    """Within the block, `get_runtime()` returns this runtime in every thread
    (flows, their tasks, in-process commands); a `Settings` gets a new runtime
    built from it. The override for tests and benchmarks: the environment is
    left alone."""
    rt = target if isinstance(target, Runtime) else build_runtime(target)
    with _lock:
        _installed.append(rt)
    try:
        yield rt
    finally:
        with _lock:
            # the latest entry that is this runtime: blocks may close out of order
            for i in range(len(_installed) - 1, -1, -1):
                if _installed[i] is rt:
                    del _installed[i]
                    break


def reset_runtimes() -> None:
    """Forget the kept runtimes (the next `get_runtime` builds anew); the
    `use_runtime` blocks stay in force."""
    with _lock:
        _runtimes.clear()
