"""The objects a worker process shares between task runs: one store, one
embedder, one LLM provider. Tasks take plain ids and look these up, so task
inputs stay small and hashable."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from episodic.config import Settings, load_settings
from storage.db import Store
from storage.episodes import Episodes
from storage.facts import Facts
from storage.raw import RawLog
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
    user_locks: dict[str, threading.Lock] = field(default_factory=dict)
    _provider_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.raw = RawLog(self.store)
        self.episodes = Episodes(self.store)
        self.facts = Facts(self.store)
        self.reflections = Reflections(self.store)
        self.checkpoints = Checkpoints(self.store)
        self.vectors = TurnVectors(self.store)

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


_lock = threading.Lock()
_runtimes: dict[tuple[str, str, str], Runtime] = {}


def get_runtime(settings: Settings | None = None) -> Runtime:
    s = settings or load_settings()
    key = (s.database_uri, s.embedder, s.llm_kind() + (s.llm_base_url or ""))
    with _lock:
        rt = _runtimes.get(key)
        if rt is None:
            from episodic.embed import make_embedder

            embedder = make_embedder(s.embedder)
            rt = Runtime(
                settings=s, store=Store(s.database_uri, dim=embedder.dim), embedder=embedder
            )
            _runtimes[key] = rt
        return rt


def reset_runtimes() -> None:
    with _lock:
        _runtimes.clear()
