"""storage.allocator.bound(): once the mmap threshold is fixed, a large block
freed does not raise it, so the next large block is still its own mapping
(gone from RSS when freed) instead of carved from a heap. Checked through
glibc's own counters in a fresh process; no RSS or timing is asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from storage.allocator import _LIBC

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import ctypes, sys
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks",
        "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
if sys.argv[1] == "bound":
    from storage.allocator import bound
    assert bound()
libc.free(libc.malloc(8 << 20))  # by default this raises the threshold to 8 MB
before = libc.mallinfo2().hblks
block = libc.malloc(2 << 20)
print(libc.mallinfo2().hblks - before)
libc.free(block)
"""


def _mapped(mode: str) -> int:
    env = {"PATH": "/usr/bin:/bin"}  # no MALLOC_* or GLIBC_TUNABLES of the caller
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(_LIBC is None, reason="glibc only")
def test_large_blocks_stay_mapped_once_bound() -> None:
    assert _mapped("default") == 0  # glibc's dynamic threshold: from a heap
    assert _mapped("bound") == 1  # fixed threshold: its own mapping


POOL = """
import pyarrow as pa
from storage.allocator import bound
bound()
print(pa.default_memory_pool().backend_name)
"""


def _pool(env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, "-c", POOL],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(_LIBC is None, reason="glibc only")
def test_arrow_allocates_through_glibc_unless_the_operator_chose() -> None:
    # mimalloc, pyarrow's default, kept 86-107 MB it had freed (docs/perf/notes.md)
    assert _pool({}) == "system"
    assert _pool({"ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}) == "mimalloc"
