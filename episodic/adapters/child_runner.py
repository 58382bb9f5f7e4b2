"""A consolidation runner for servers: the consolidate flow in one child
process, started once and kept, at a lower CPU priority.

Run in the server's own process, a consolidation holds the GIL in pure
Python for long stretches, and every write the server answers meanwhile
waits for it: on two cores that put a write's p99 in the hundreds of
milliseconds. In a child the OS schedules the two apart, and `nice` tells it
which one an agent is waiting on. The child builds its own Memory from the
same environment (the same store); requests and summaries cross a pipe."""

from __future__ import annotations

import itertools
import logging
import multiprocessing
import os
import signal
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from episodic.errors import EpisodicError
from episodic.service.memory import Memory

log = logging.getLogger("episodic.child_runner")
NICE = 10  # below the server, above nothing else of ours


class ChildRunFailed(EpisodicError):
    """A consolidation in the child raised; `kind` names the child's exception."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"consolidation failed in the runner process: {kind}: {message}")
        self.kind = kind


class ChildRunner:
    def __init__(self, *, threads: int = 2, nice: int = NICE) -> None:
        self.threads = threads
        self.nice = nice
        self._lock = threading.Lock()
        self._ids = itertools.count()
        # request number -> (the child's pipe it went to, its answer)
        self._waiting: dict[int, tuple[Connection, Future[dict[str, Any]]]] = {}
        self._conn: Connection | None = None
        self._proc: Any = None

    def __call__(
        self, memory: Memory, *, user_id: str | None, flush: bool, shard: str | None
    ) -> dict[str, Any]:
        done: Future[dict[str, Any]] = Future()
        with self._lock:
            conn = self._running()
            n = next(self._ids)
            self._waiting[n] = (conn, done)
            conn.send((n, user_id, flush, shard))
        return done.result()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.send(None)  # finish what runs, then exit
                self._proc.join(timeout=60)
                _end_group(self._proc.pid)
                self._conn = None

    def _running(self) -> Connection:
        """The child's end of the pipe, (re)starting a child that is gone."""
        if self._conn is None or not self._proc.is_alive():
            ctx = multiprocessing.get_context("spawn")  # no threads or locks of ours inherited
            mine, theirs = ctx.Pipe()
            self._proc = ctx.Process(
                target=serve, args=(theirs, self.threads, self.nice), daemon=True
            )
            self._proc.start()
            theirs.close()
            self._conn = mine
            threading.Thread(target=self._read, args=(mine, self._proc), daemon=True).start()
        return self._conn

    def _read(self, conn: Connection, proc: Any) -> None:
        while True:
            try:
                n, summary, error = conn.recv()
            except (EOFError, OSError):  # the child is gone: fail what waits on it alone
                proc.join(timeout=5)
                _end_group(proc.pid)  # what it started (Prefect's server) goes with it
                with self._lock:  # (a restarted child's requests are not its)
                    gone = [n for n, (c, _) in self._waiting.items() if c is conn]
                    lost = [self._waiting.pop(n)[1] for n in gone]
                for f in lost:
                    f.set_exception(ChildRunFailed("ChildExited", "the runner process exited"))
                return
            with self._lock:
                _, f = self._waiting.pop(n)
            if error is None:
                f.set_result(summary)
            else:
                f.set_exception(ChildRunFailed(*error))


def _end_group(pgid: int) -> None:
    """Kill what is left of a child's process group: a child killed by a signal
    leaves the processes it started (its ephemeral Prefect server) running."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # nothing left of it


def serve(conn: Connection, threads: int, nice: int) -> None:
    """The child: one Memory, runs requested consolidations in `threads`; it
    leads a process group of its own, so the runner can end all it started."""
    os.setpgid(0, 0)
    os.nice(nice)
    from episodic.adapters.embedded import Memory as Embedded

    send = threading.Lock()
    with Embedded() as memory, ThreadPoolExecutor(threads) as pool:

        def run(n: int, user_id: str | None, flush: bool, shard: str | None) -> None:
            try:
                summary = memory.consolidate(user_id, flush=flush, shard=shard)
                out: tuple[Any, ...] = (n, summary, None)
            except Exception as e:
                out = (n, None, (type(e).__name__, str(e)))
            with send:
                conn.send(out)

        while True:
            try:
                msg = conn.recv()
            except EOFError:  # the server is gone
                return
            if msg is None:
                return
            pool.submit(run, *msg)
