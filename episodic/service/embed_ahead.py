"""Embedding the next users' new turns while the current users consolidate.

A flow run takes its users a group at a time. A user's poll embeds first
(both cores, in the embedder's pool) and then scores, merges and reflects
(mostly Python, one core at most): with every user of a group in step, the
embedder idled through the second half. Run ahead, it stores the next
group's vectors meanwhile, and their polls find them stored
(`embed_turns` embeds only what is missing).

Vectors are a cache keyed by turn and model, a function of the text alone:
writing them early changes no episode, and a failure here only costs the
poll its own embedding. The run joins this before its index upkeep, so no
write races an index commit."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

from episodic.service.runtime import Runtime
from episodic.service.segment import embed_turns
from storage.lease import LeaseBusy, user_lease
from storage.raw_ranges import read_ranges

log = logging.getLogger(__name__)

# texts a call: the current users' fact and reflection texts share the
# embedder's pool and wait behind whatever is queued
CHUNK = 32
# turns read a time: it runs beside the current users, whose peak it adds to
WAVE = 512

Work = list[tuple[str, list[tuple[str, int]]]]  # user -> (stream, head seq)


def slices(spans: dict[str, tuple[int, int]], batch: int) -> Iterator[dict[str, tuple[int, int]]]:
    """`spans` ({stream: (after, head)}) cut into reads of at most `batch`
    turns, a stream at most once a read: many short streams share a read, a
    long one takes several."""
    wave: dict[str, tuple[int, int]] = {}
    room = batch
    for sid, (after, head) in spans.items():
        while after < head:
            take = min(head - after, room)
            wave[sid] = (after, after + take)
            after += take
            room -= take
            if room == 0:
                yield wave
                wave, room = {}, batch
    if wave:
        yield wave


class EmbedAhead:
    """One background thread; `start` hands it a group of users, `wait`
    joins it. Closing stops it between reads."""

    def __init__(self, rt: Runtime, enabled: bool = True) -> None:
        self.rt = rt
        self.enabled = enabled
        self.embedded = 0
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="embed-ahead") if enabled else None
        self._running: Future[int] | None = None

    def start(self, work: Work) -> None:
        self.wait()
        if self._pool is not None and work:
            self._running = self._pool.submit(self._embed, work)

    def wait(self) -> None:
        running, self._running = self._running, None
        if running is None:
            return
        try:
            self.embedded += running.result()
        except Exception as e:  # a speed-up: the polls embed what is missing
            log.warning("embedding ahead failed, the polls embed themselves: %s", e)

    def _embed(self, work: Work) -> int:
        rt = self.rt
        done = 0
        for user_id, heads in work:
            # under the user's lease, never waiting: a forget in flight must
            # not find vectors of its turns written back after it
            try:
                with user_lease(rt.store.uri, user_id, wait_s=0):
                    done += self._embed_user(user_id, heads)
            except LeaseBusy:
                continue  # its own poll embeds what is missing
            if self._stop.is_set():
                break
        return done

    def _embed_user(self, user_id: str, heads: list[tuple[str, int]]) -> int:
        rt = self.rt
        batch = max(1, min(rt.settings.batch_turns, WAVE))
        marks = rt.checkpoints.progress(user_id)
        spans = {sid: (marks.get((user_id, sid), (-1, False))[0], head) for sid, head in heads}
        done = 0
        for wave in slices(spans, batch):
            if self._stop.is_set():
                break
            read = read_ranges(rt.raw, user_id, wave)
            turns = [t for ts in read.values() for t in ts]
            if turns:
                done += len(embed_turns(rt, user_id, turns, chunk=CHUNK)[1])
        return done

    def __enter__(self) -> EmbedAhead:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self.wait()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
