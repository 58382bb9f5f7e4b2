"""The one `Memory` a command runs on: built on first use from the
environment's settings (EPISODIC_HOME ...), the same one for the whole
invocation (the flows a command starts get it too), closed when the command
ends (`release`, called by episodic.adapters.cli.guard), so the next
invocation in this process (a test's CliRunner) builds its own."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from episodic.adapters.embedded import Memory

_memory: Memory | None = None


def memory() -> Memory:
    """This invocation's memory (the Python face: consolidation runs the
    consolidate flow in this process, on Prefect's API)."""
    global _memory
    if _memory is None:
        with _collector_paused():
            from episodic.adapters.embedded import Memory
            from episodic.config import load_settings

            _memory = Memory(load_settings())
    return _memory


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The service's first import (LanceDB, pyarrow, the models) makes
    objects that live as long as the process: the cyclic collector's passes
    meanwhile free nothing and cost a command's start some tens of ms."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def for_user(user_id: str) -> Memory:
    """The memory, for a command scoped to `user_id`: NotFoundError (exit 1,
    one line) when nothing of that user is stored, rather than an empty
    answer that looks like an empty memory."""
    m = memory()
    m.require_user(user_id)
    return m


def release() -> None:
    """Close this invocation's memory (the recall bookkeeping still queued is
    written) and forget it."""
    global _memory
    m, _memory = _memory, None
    if m is not None:
        m.close()
