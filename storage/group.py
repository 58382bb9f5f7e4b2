"""A group commit: many threads submit items; one of them (the leader) commits
everything queued so far in one call while the others wait, so N concurrent
writes cost about one LanceDB commit instead of N commits that conflict and
retry. Each submitter gets its own item's result, or the group's error."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class _Request(Generic[T, R]):
    item: T
    size: int
    done: bool = False
    result: R | None = None
    error: BaseException | None = None


class GroupCommit(Generic[T, R]):
    """`commit(items)` returns one result per item, in order; a group holds at
    most `max_size` (the sum of the items' sizes), and always at least one item."""

    def __init__(self, commit: Callable[[Sequence[T]], Sequence[R]], max_size: int) -> None:
        self._commit = commit
        self.max_size = max_size
        self._cv = threading.Condition()
        self._queue: list[_Request[T, R]] = []
        self._writing = False
        self.commits = 0  # groups committed (benchmarks report it)

    def submit(self, item: T, size: int = 1) -> R:
        req: _Request[T, R] = _Request(item, size)
        with self._cv:
            self._queue.append(req)
            while not req.done:
                if self._writing:
                    self._cv.wait()
                    continue
                self._writing = True
                group: list[_Request[T, R]] = []
                total = 0
                while self._queue and (not group or total + self._queue[0].size <= self.max_size):
                    r = self._queue.pop(0)
                    group.append(r)
                    total += r.size
                self._cv.release()
                try:
                    self._run(group)
                finally:
                    self._cv.acquire()
                    self._writing = False
                    self._cv.notify_all()
        if req.error is not None:
            raise req.error
        return cast(R, req.result)

    def _run(self, group: list[_Request[T, R]]) -> None:
        try:
            results = list(self._commit([r.item for r in group]))
            if len(results) != len(group):  # else a waiter would wait for ever
                raise RuntimeError(f"group commit gave {len(results)} results for {len(group)}")
            self.commits += 1
        except BaseException as e:  # every waiter hears it, not only the leader
            for r in group:
                r.error, r.done = e, True
            return
        for r, res in zip(group, results, strict=True):
            r.result, r.done = res, True
