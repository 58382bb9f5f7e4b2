"""A LanceDB commit preempted by another process's commit (two processes
making a table's first index at once, a compaction beside an update, a purge
beside a recall count): done again on the newer version, where the work is
often found done already."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def on_conflict(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn`, retried up to 8 times with backoff (about 12 s in all) on a LanceDB commit conflict.
    tenacity loads on the first call, not with the store: `episodic status`
    never needs it."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        from tenacity import (
            Retrying,
            retry_if_exception_message,
            stop_after_attempt,
            wait_exponential,
        )

        for attempt in Retrying(
            retry=retry_if_exception_message(match=r".*[Cc]onflict.*"),
            stop=stop_after_attempt(8),
            wait=wait_exponential(multiplier=0.2, max=3),
            reraise=True,
        ):
            with attempt:
                return fn(*args, **kwargs)
        raise AssertionError("unreachable: the last attempt reraises")

    return run
