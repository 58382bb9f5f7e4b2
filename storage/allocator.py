"""Hand the C allocator's free memory back to the operating system.

LanceDB and Arrow allocate through glibc malloc from many threads (its tokio
workers, our user threads), and glibc keeps what they free in per-thread
arenas instead of returning it. Over a long consolidation that free memory
is most of the growth: at 100,000 turns a `malloc_trim(0)` took a process
from 947 MB to 652 MB, and malloc's own count was 594 MB held for 225 MB in
use. `release()` after each bounded step (a wave, a chunk, a fact window, a
user) keeps what is held near what is used. It changes no result.

`bound()` fixes glibc's mmap threshold: by default every freed large block
raises it (up to 32 MB), so LanceDB's and Arrow's big scan and merge buffers
soon come from the heaps instead of their own mappings, and the holes they
leave there grow with the tables. With the threshold fixed, a buffer of
`MMAP_THRESHOLD` or more is its own mapping, gone from RSS when freed.

It also makes glibc Arrow's allocator: pyarrow's default, mimalloc, kept
what it had freed in its own arena, 86 MB at 50,000 turns and 107 MB at
200,000, while Arrow counted under 8 MB in use (docs/perf/notes.md, memory);
freed to glibc, it is returned by `release()` like the rest.

Elsewhere than glibc (musl, macOS) there is no `malloc_trim` or `mallopt`
and only Arrow's pool is released."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from typing import Any

import pyarrow as pa


def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = lib.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    lib.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.mallopt.restype = ctypes.c_int
    return lib


_LIBC = _libc()
M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
MMAP_THRESHOLD = 128 * 1024  # glibc's own starting value, kept: larger blocks are mapped
# the operator's own choice wins (glibc reads these at start)
_OWN = ("MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")
_bound = threading.Lock()
_done = False
_fixed = False  # the threshold is ours


def release() -> None:
    """Return unused memory: Arrow's pool, then every glibc arena's free pages."""
    pa.default_memory_pool().release_unused()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def bound() -> bool:
    """Fix the mmap threshold at `MMAP_THRESHOLD` and give Arrow glibc's
    allocator, once per process (a store opening calls it); False where there
    is no glibc or the environment sets its own threshold (an operator's
    ARROW_DEFAULT_MEMORY_POOL keeps its pool). Changes no result, only where
    memory comes from."""
    global _done, _fixed
    if _LIBC is None:
        return False
    with _bound:
        if not _done:
            if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
                pa.set_memory_pool(pa.system_memory_pool())
            own = any(k in os.environ for k in _OWN)
            _fixed = not own and _LIBC.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
            _done = True
        return _fixed
