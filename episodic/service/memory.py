"""`Memory`: the one application service. Every face (CLI, HTTP, MCP, the
Python API, the Prefect flows, the benchmarks) calls these methods and gets
these result types (episodic/service/views.py), so no two faces disagree.

    with Memory(Settings(home=path)) as memory:
        memory.add("alice", [{"role": "user", "text": "I moved to Berlin"}])
        memory.consolidate("alice", flush=True)
        hits = memory.search("alice", "where does alice live")

Consolidation is composed by the Prefect flows (flows/), which this service
never imports: a face that consolidates hands the service a `runner`
(episodic.adapters.python gives the in-process flow runner by default)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from episodic.closing import Closing
from episodic.config import Settings, load_settings
from episodic.embed.base import Embedder
from episodic.errors import ConfigError, KeyReusedError, NotFoundError
from episodic.llm.base import LLMProvider
from episodic.models import utc
from episodic.retrieval import ScoreWeights
from episodic.service.receipts import ingest_status
from episodic.service.runtime import Runtime, build_runtime
from episodic.service.search import MemoryOptions, search_memory
from episodic.service.status import stream_status
from episodic.service.views import (
    HIT_KINDS,
    AddReceipt,
    EpisodeDetail,
    EpisodeView,
    FactEvent,
    FactView,
    ForgetReceipt,
    Hit,
    IngestStatus,
    ReflectionView,
    StreamStatus,
    UsageView,
    forget_target,
)
from storage.frames import frame, user_exists
from storage.journal import journal_dir
from storage.keys import SCOPES, ApiKey, ApiKeys
from storage.offsets import Offsets
from storage.receipts import Receipts, key_hash

if TYPE_CHECKING:
    # loaded by the verbs that use them: `episodic status` and search start
    # without the ingest formats, the doctor and the transfer code
    from episodic.service.accept import Writer
    from episodic.service.capture import CaptureReport
    from episodic.service.doctor import DoctorReport
    from episodic.service.drain import DrainReport
    from episodic.service.ingest import IngestReport
    from storage.transfer import TransferReport

# a correction waits this long for a merge of the user's facts in flight, a
# forget for a run holding the user; then it is refused as busy with nothing
# changed (a page or a request must not hang on it)
CORRECTION_WAIT_S = 30.0
# locks that serialise adds sharing an idempotency key (striped: bounded memory)
KEY_STRIPES = 64


class ConsolidationRunner(Protocol):
    """Runs one consolidation poll over this memory (the consolidate flow)."""

    def __call__(
        self, memory: Memory, *, user_id: str | None, flush: bool, shard: str | None
    ) -> dict[str, Any]: ...


class Memory(Closing):
    """One store, one embedder, one provider, and every verb users have.

    Built explicitly (from `Settings`, or a `Runtime` already built) and used
    as a context manager; `close()` writes the recall bookkeeping still queued.
    Slotted: a flow that is handed a Memory records it as `<Memory>`, never
    walks into its store."""

    __slots__ = (
        "rt", "runner", "_journal", "_writer", "_writer_lock", "_key_locks", "_keys", "_receipts",
    )  # fmt: skip

    def __init__(
        self,
        settings: Settings | Runtime | None = None,
        *,
        embedder: Embedder | None = None,
        provider: LLMProvider | None = None,
        runner: ConsolidationRunner | None = None,
        journal: bool = False,
    ) -> None:
        """`journal`: acknowledge `add` once its record is fsynced in the
        ingest journal (`episodic.service.journaled`) instead of once LanceDB
        has committed it; for a long-lived server on a local store. Whatever
        it is, a journal left by a writer that died is stored first."""
        if isinstance(settings, Runtime):
            self.rt = settings
            if provider is not None:
                self.rt.provider = provider
        else:
            self.rt = build_runtime(
                settings or load_settings(), embedder=embedder, provider=provider
            )
        self.runner = runner
        self._keys: ApiKeys | None = None
        self._receipts: Receipts | None = None
        directory = journal_dir(self.rt.store.uri)
        if directory is not None and directory.is_dir():
            from episodic.service.journaled import recover

            recover(directory, self.rt.raw, self.receipts)
        self._journal = journal and directory is not None
        self._writer: Writer | None = None
        self._writer_lock = threading.Lock()  # two threads' first adds must share one
        self._key_locks = [threading.Lock() for _ in range(KEY_STRIPES)]

    @classmethod
    def at(cls, home: str | Path, **kw: Any) -> Memory:
        """A memory kept under the directory `home` (its LanceDB store inside)."""
        return cls(load_settings().model_copy(update={"home": Path(home)}), **kw)

    @property
    def settings(self) -> Settings:
        return self.rt.settings

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self.rt.recalls.flush()

    # ---- writes ------------------------------------------------------------
    @property
    def writer(self) -> Writer:
        """What acknowledges adds (one per service, shared by concurrent adds)."""
        with self._writer_lock:
            if self._writer is None:
                directory = journal_dir(self.rt.store.uri)
                if self._journal and directory is not None:
                    from episodic.service.journaled import JournaledWriter

                    self._writer = JournaledWriter(self.rt.raw, self.receipts, directory)
                else:
                    from episodic.service.accept import GroupWriter

                    self._writer = GroupWriter(self.rt.raw, self.receipts)
            return self._writer

    def settle(self, user_id: str | None = None) -> None:
        """Wait until every acknowledged add of the user is in LanceDB (a no-op
        without the journal); every read of raw calls it first."""
        if self._writer is not None:
            self._writer.settle(user_id)

    def add(
        self,
        user_id: str,
        turns: Sequence[Mapping[str, Any] | Any],
        *,
        source: str = "python",
        stream_id: str = "api",
        idempotency_key: str | None = None,
    ) -> AddReceipt:
        """Append turns (generic JSONL records as objects: role, text, ts?,
        stream_id?, kind?, meta?, id?) to the user's raw log, idempotently;
        the receipt comes once they are durable, with an `ingest_id` to ask
        about (`ingest_status`). A retry with the same `idempotency_key` gets
        the first receipt and writes nothing. Bad items are quarantined under
        `user_id` and listed with their index and reason."""
        if not idempotency_key:
            return self._add(user_id, turns, source, stream_id, None)
        from episodic.service.accept import request_print

        sent = request_print([*turns, {"stream_id": stream_id}])
        # concurrent retries with one key: the first commits, the rest wait for its answer
        stripe = int(key_hash(user_id, idempotency_key)[:8], 16) % len(self._key_locks)
        with self._key_locks[stripe]:
            first = self.writer.first_answer(user_id, idempotency_key)
            if first is None:
                return self._add(user_id, turns, source, stream_id, (idempotency_key, sent))
        if first.get("request", sent) != sent:  # receipts from before kept no fingerprint
            raise KeyReusedError(
                "this Idempotency-Key came before with other turns: nothing was "
                "written; send new turns under a new key"
            )
        return AddReceipt.model_validate(first)

    def _add(
        self,
        user_id: str,
        turns: Sequence[Mapping[str, Any] | Any],
        source: str,
        stream_id: str,
        keyed: tuple[str, str] | None,  # the caller's idempotency key, the request's print
    ) -> AddReceipt:
        from episodic.service.accept import Draft, check

        writer = self.writer
        turns, rejects = check(
            writer,
            list(turns),
            user_id=user_id,
            source=source,
            max_turn_chars=self.settings.max_turn_chars,
            default_stream=stream_id,
        )
        draft = Draft(
            user_id=user_id,
            ingest_id=Receipts.new_id(),
            idempotency=key_hash(user_id, keyed[0]) if keyed else "",
            turns=turns,
            rejects=rejects,
            request=keyed[1] if keyed else "",
        )
        return writer.commit(draft)

    @property
    def receipts(self) -> Receipts:
        if self._receipts is None:
            self._receipts = Receipts(self.rt.store)
        return self._receipts

    def ingest_status(self, user_id: str, ingest_id: str) -> IngestStatus:
        """What became of one write (`add`'s receipt): queued, consolidated or failed."""
        self.settle(user_id)
        found = self.receipts.get(user_id, ingest_id)
        if found is None:
            raise NotFoundError("ingest", ingest_id, "not stored for this user")
        return ingest_status(self.rt, found)

    def usage(self, user_id: str, *, limit: int = 20) -> UsageView:
        """The model calls, tokens and cost of the user's recent consolidate runs."""
        from storage.ledger import SUMMED, Ledger

        recent = Ledger(self.rt.store).runs(user_id, limit)
        return UsageView(
            user_id=user_id,
            runs=len(recent),
            **{k: sum(getattr(r, k) for r in recent) for k in SUMMED},
            cost_usd=round(sum(r.cost_usd or 0.0 for r in recent), 6),
            unpriced_runs=sum(r.cost_usd is None and r.calls > 0 for r in recent),
            recent=recent,
        )

    def ingest(
        self,
        path: Path,
        fmt: str = "auto",
        *,
        user_id: str | None = None,
        stream_id: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> IngestReport:
        """Append a transcript file to the raw log (idempotent); bad lines are
        quarantined with their line number and reason."""
        from episodic.service.ingest import ingest_file

        report = ingest_file(
            self.rt.raw,
            path,
            fmt,
            user_id=user_id,
            stream_id=stream_id,
            max_turn_chars=self.settings.max_turn_chars,
            progress=progress,
        )
        self.rt.store.ensure_indexes()
        return report

    def capture(
        self, path: Path, fmt: str, *, user_id: str, override_user: bool = True
    ) -> CaptureReport:
        """The lines a growing transcript gained since the last capture (a
        rewritten one is read again); `user_id` owns the offset."""
        from episodic.service.capture import capture_file

        rt = self.rt
        return capture_file(
            rt.raw,
            Offsets(rt.store),
            path,
            fmt,
            user_id=user_id,
            max_turn_chars=self.settings.max_turn_chars,
            override_user=override_user,
        )

    def drain_spool(self) -> DrainReport:
        """Capture what the agent hooks spooled (`episodic-hook`)."""
        from episodic.service.drain import drain_spool

        return drain_spool(self.rt)

    def spooled(self, user_id: str | None = None) -> list[dict[str, object]]:
        """What the hooks spooled that no drain has captured yet."""
        from episodic.spool import listing

        return listing(self.settings.home, user_id)

    def consolidate(
        self, user_id: str | None = None, *, flush: bool = False, shard: str | None = None
    ) -> dict[str, Any]:
        """One consolidation poll (segment, score, merge facts, reflect when
        due) for one user or all, through the runner this memory was given."""
        if self.runner is None:
            raise ConfigError(
                "runner", "this Memory has no consolidation runner (episodic.Memory has one)"
            )
        self.settle(user_id)
        return self.runner(self, user_id=user_id, flush=flush, shard=shard)

    # ---- reads -------------------------------------------------------------
    def require_user(self, user_id: str) -> None:
        """NotFoundError when nothing of `user_id` is stored, rather than an
        empty answer that looks like an empty memory."""
        if not user_exists(self.rt.store, user_id):
            raise NotFoundError(
                "user",
                user_id,
                "no turns, episodes, facts or rejected input stored "
                "(`episodic status` lists every user's streams)",
            )

    def search(
        self,
        user_id: str,
        query: str,
        *,
        k: int = 10,
        kinds: Sequence[str] = HIT_KINDS,
        weights: ScoreWeights | None = None,
        max_turns: int | None = None,
        record: bool = True,
        now: datetime | None = None,
    ) -> list[Hit]:
        """The shipped search: hybrid hits on turns (with their neighbours),
        facts and reflections, best first, every part of each score shown.
        A bad `k` or kind, or an empty query, raises ValueError."""
        if not query.strip():
            raise ValueError("the query is empty")
        opts = MemoryOptions(
            k=k,
            kinds=tuple(kinds),
            weights=weights or ScoreWeights(),
            max_turns=max_turns,
            record=record,
        )
        self.settle(user_id)
        return search_memory(self.rt, user_id, query, opts, now=now)

    def facts(
        self, user_id: str, *, as_of: datetime | None = None, include_inactive: bool = False
    ) -> list[FactView]:
        """Active facts; `include_inactive` adds superseded and deleted ones;
        `as_of` gives those believed true then."""
        repo = self.rt.facts
        rows = (
            repo.as_of(user_id, utc(as_of))
            if as_of
            else repo.list(user_id, include_inactive=include_inactive)
        )
        return [FactView.of(f) for f in rows]

    def fact(self, user_id: str, fact_id: str) -> FactView:
        """One fact of any status, by its id or a unique prefix of it."""
        full = self._resolve("fact", fact_id, self._fact_ids(user_id))
        (row,) = self.rt.facts.by_ids(user_id, [full])
        return FactView.of(row)

    def invalidate_fact(self, user_id: str, fact_id: str, *, actor: str = "user") -> FactView:
        """The user's correction: the fact stops being believed (status
        deleted, valid until now) with a DELETE in its history decided by
        `user-correction`; nothing is erased and `restore_fact` undoes it."""
        full = self._resolve("fact", fact_id, self._fact_ids(user_id))
        with self.rt.facts_held(user_id, wait_s=CORRECTION_WAIT_S):
            return FactView.of(self.rt.facts.correct(user_id, full, active=False, actor=actor))

    def restore_fact(self, user_id: str, fact_id: str, *, actor: str = "user") -> FactView:
        """Undo `invalidate_fact`: active again, an ADD by `user-correction` in its history."""
        full = self._resolve("fact", fact_id, self._fact_ids(user_id))
        with self.rt.facts_held(user_id, wait_s=CORRECTION_WAIT_S):
            return FactView.of(self.rt.facts.correct(user_id, full, active=True, actor=actor))

    def reword_fact(
        self, user_id: str, fact_id: str, text: str, *, actor: str = "user"
    ) -> FactView:
        """The user's fix of what a fact says: a new active fact with `text`,
        for the same time and episodes, superseding the old one, which is never
        believed again (an UPDATE by `user-correction` in its history)."""
        from episodic.facts.schema import MAX_MERGE_TEXT  # the longest a model may word one

        text = " ".join(text.split())
        if not text:
            raise ValueError("the fact's new text is empty")
        if len(text) > MAX_MERGE_TEXT:
            raise ValueError(f"a fact is at most {MAX_MERGE_TEXT} characters, got {len(text)}")
        full = self._resolve("fact", fact_id, self._fact_ids(user_id))
        vector = self.rt.embedder.embed([text])[0]
        with self.rt.facts_held(user_id, wait_s=CORRECTION_WAIT_S):
            return FactView.of(self.rt.facts.reword(user_id, full, text, vector.tolist(), actor))

    def _fact_ids(self, user_id: str) -> list[str]:
        return [f.fact_id for f in self.rt.facts.list(user_id, include_inactive=True)]

    def fact_history(self, user_id: str, fact_id: str) -> list[FactEvent]:
        """Every ADD / UPDATE / DELETE / NOOP decision on a fact (a unique
        prefix of its id will do)."""
        full = self._resolve("fact", fact_id, self._fact_ids(user_id))
        return [FactEvent.of(h) for h in self.rt.facts.history(user_id, full)]

    def episodes(
        self, user_id: str, *, stream_id: str | None = None, limit: int | None = None
    ) -> list[EpisodeView]:
        """The user's episodes, oldest first (`limit`: the most recent ones)."""
        eps = sorted(self.rt.episodes.list(user_id, stream_id), key=lambda e: e.ended_at)
        if limit is not None:
            eps = eps[-limit:] if limit > 0 else []
        return [EpisodeView.of(e) for e in eps]

    def episode(self, user_id: str, episode_id: str) -> EpisodeDetail:
        """One episode with its turns (a unique prefix of its id will do)."""
        self.settle(user_id)
        found = self.rt.episodes.by_ids(user_id, [episode_id]) if episode_id else []
        if not found:
            ids = [e.episode_id for e in self.rt.episodes.list(user_id)]
            found = self.rt.episodes.by_ids(user_id, [self._resolve("episode", episode_id, ids)])
        e = found[0]
        return EpisodeDetail.with_turns(e, self.rt.raw.by_ids(user_id, list(e.turn_ids)))

    def reflections(self, user_id: str, *, include_archived: bool = False) -> list[ReflectionView]:
        rows = self.rt.reflections.list(user_id, include_archived=include_archived)
        return [ReflectionView.of(r) for r in rows]

    def status(self, user_id: str | None = None) -> list[StreamStatus]:
        """Per stream: raw turns, watermark, lag, open episode, last run."""
        self.settle(user_id)
        return stream_status(self.rt, user_id)

    def doctor(self, user_id: str | None = None, *, repair: bool = False) -> DoctorReport:
        """Check (and with `repair`, mend) the store's invariants."""
        from episodic.service.doctor import run_doctor

        self.settle(user_id)
        return run_doctor(self.rt, user_id, repair=repair)

    # ---- transfer ----------------------------------------------------------
    def export(self, user_id: str, out: Path) -> TransferReport:
        from storage.transfer import export_user

        self.settle(user_id)
        return export_user(self.rt.store, user_id, out)

    def import_(self, src: Path) -> TransferReport:
        from storage.transfer import import_dir

        report = import_dir(self.rt.store, src)
        self.rt.store.ensure_indexes()
        return report

    def forget(
        self,
        user_id: str,
        *,
        turn: str | None = None,
        episode: str | None = None,
        fact: str | None = None,
        actor: str = "python",
    ) -> ForgetReceipt:
        """Erase a whole user, or one turn, episode or fact of theirs (at most
        one of the three), from every file; re-derive what depended on it.
        The receipt (also an audit row) holds counts, never content. A run
        holding the user is waited for up to CORRECTION_WAIT_S, then BusyError."""
        from episodic.service import forget as f

        if not user_id.strip():
            raise ValueError("the user id to forget is empty")
        asked = forget_target(turn=turn, episode=episode, fact=fact)
        rt, wait = self.rt, CORRECTION_WAIT_S
        self.settle(user_id)  # acknowledged turns are stored, and their journal gone, first
        rt.recalls.flush()  # queued recall writes land first: they would conflict later
        try:
            if not asked:
                receipt = ForgetReceipt(**f.forget_user(rt, user_id, actor, wait))
                self.keys.forget_cached()  # the user's keys are gone: no cached pass either
                return receipt
            kind, ident = asked[0]
            if kind == "fact":
                full = self._resolve("fact", ident, self._fact_ids(user_id))
                return ForgetReceipt(**f.forget_fact(rt, user_id, full, actor, wait))
            if kind == "episode":
                ids = [e.episode_id for e in rt.episodes.list(user_id)]
                full = self._resolve("episode", ident, ids)
                return ForgetReceipt(**f.forget_episode(rt, user_id, full, actor, wait))
            if not rt.raw.by_ids(user_id, [ident]):  # a unique prefix will do
                ids = frame(rt.store, "raw_turns", user_id, ["turn_id"])["turn_id"].to_pylist()
                ident = self._resolve("turn", ident, ids)
            counts = f.forget_turns(rt, user_id, [ident], "turn", ident, actor, wait)
            return ForgetReceipt(**counts)
        finally:
            rt.working.drop(user_id)  # nothing forgotten stays in the search's memory

    # ---- keys --------------------------------------------------------------
    @property
    def keys(self) -> ApiKeys:
        if self._keys is None:
            self._keys = ApiKeys(self.rt.store)
        return self._keys

    def create_key(self, user_id: str, scopes: Sequence[str] = SCOPES) -> tuple[str, ApiKey]:
        """A new key for `user_id`: the secret (shown once) and its stored record."""
        return self.keys.create(user_id, tuple(scopes))

    def verify_key(self, secret: str) -> ApiKey | None:
        return self.keys.verify(secret)

    # ---- helpers -----------------------------------------------------------
    @staticmethod
    def _resolve(kind: str, given: str, ids: Sequence[str]) -> str:
        """The one id that is `given` or starts with it, else NotFoundError."""
        if given in ids:
            return given
        found = [i for i in ids if given and i.startswith(given)]
        if len(found) != 1:
            hint = f"{len(found)} ids start with it" if found else "not stored for this user"
            raise NotFoundError(kind, given, hint)
        return found[0]
