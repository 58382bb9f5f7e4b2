"""Core-seconds beside wall seconds, for a benchmark phase.

The pipeline's ratio is bound by CPU on a small machine: when the embedder
fills every core, what the rest of the pipeline costs shows in this
process's core-seconds, not in its waiting. `CpuClock` reads the process's
CPU time (every thread, native ones included) and how busy the machine's
cores were (`/proc/stat`, None where there is none) over a block."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any


def _machine_ticks() -> tuple[int, int, int] | None:
    """(all ticks, ticks not busy, cores) of the machine since boot; None off Linux."""
    try:
        with open("/proc/stat", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        fields = [int(x) for x in lines[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    cores = sum(1 for ln in lines if ln.startswith("cpu") and ln[3:4].isdigit())
    # user nice system idle iowait irq softirq steal (guest time is inside user);
    # not busy here: idle, iowait and steal (the host ran something else)
    ticks = fields[:8] + [0] * (8 - len(fields[:8]))
    return sum(ticks), ticks[3] + ticks[4] + ticks[7], max(1, cores)


class CpuClock:
    """`with CpuClock() as c: ...`, then `c.wall_s`, `c.core_s`, `c.cores_busy`."""

    wall_s = 0.0
    core_s = 0.0
    cores_busy: float | None = None

    def __enter__(self) -> CpuClock:
        self._ticks = _machine_ticks()
        self._core = time.process_time()
        self._wall = time.perf_counter()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.wall_s = time.perf_counter() - self._wall
        self.core_s = time.process_time() - self._core
        after = _machine_ticks()
        if self._ticks is not None and after is not None:
            total, idle = after[0] - self._ticks[0], after[1] - self._ticks[1]
            # the first line sums every core: its busy share times the cores
            self.cores_busy = (total - idle) / total * after[2] if total else None

    def as_dict(self) -> dict[str, Any]:
        busy = None if self.cores_busy is None else round(self.cores_busy, 2)
        return {
            "wall_s": round(self.wall_s, 2),
            "core_s": round(self.core_s, 2),
            "cores_busy": busy,
        }
