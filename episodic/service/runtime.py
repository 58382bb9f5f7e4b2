"""The resources behind one `Memory` service: one store with its
repositories, one embedder, one LLM provider. The service owns one and hands
it to the consolidation steps; nothing looks it up globally."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from episodic.config import Settings
from episodic.embed.base import Embedder
from episodic.llm.base import LLMProvider
from episodic.service.working_set import WorkingSet
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
    embedder: Embedder
    _provider: LLMProvider | None = field(default=None, repr=False)
    raw: RawLog = field(init=False)
    episodes: Episodes = field(init=False)
    facts: Facts = field(init=False)
    reflections: Reflections = field(init=False)
    checkpoints: Checkpoints = field(init=False)
    vectors: TurnVectors = field(init=False)
    recalls: RecallLog = field(init=False)  # search's recall writes, off the query path
    user_locks: dict[str, threading.Lock] = field(default_factory=dict)
    working: WorkingSet = field(init=False)  # the search's users in memory
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
        self.working = WorkingSet(
            self.store, self.embedder.name, self.embedder.dim, self.settings.working_set_mb
        )

    @property
    def provider(self) -> LLMProvider:
        with self._provider_lock:
            if self._provider is None:
                from episodic.llm.factory import make_provider

                self._provider = make_provider(self.settings)
            return self._provider

    @provider.setter
    def provider(self, value: LLMProvider) -> None:
        self._provider = value

    def lock_for(self, user_id: str) -> threading.Lock:
        return self.user_locks.setdefault(user_id, threading.Lock())


def build_runtime(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    provider: LLMProvider | None = None,
) -> Runtime:
    """The resources for `settings`; `embedder` and `provider` replace the
    ones the settings name (tests, evaluations)."""
    if embedder is None:
        from episodic.embed import make_embedder

        embedder = make_embedder(settings.embedder)
    store = open_store(settings, dim=embedder.dim)
    return Runtime(settings=settings, store=store, embedder=embedder, _provider=provider)
