"""Many short streams per user: the cost of a consolidate poll per stream at
10, 100, 1,000 and 10,000 streams of 3 turns, and the poll of 200 streams of
3 turns against one stream of 600 turns (the same number of turns).

Each size runs in a fresh store under one user, through the consolidate flow
(Prefect's API already started). Three polls per size:

- `first`: every stream new, 3 turns each; nothing closes (the turns have
  just arrived, so no episode is idle yet);
- `second`: 3 more turns on every stream; the open episodes grow;
- `flush`: nothing new, every open episode closed, then scored and merged
  (salience, facts: the whole pipeline per episode).

The embedder is the cheap hash one by default: MiniLM would add the same
embedding cost per turn at every size (measured by `bench pipeline`), and at
10,000 streams x 6 turns would take minutes of its own. What this benchmark
watches is everything else: per-stream storage round trips, commits, task
runs. The figures are per stream; flat means the largest size costs no more
per stream than 1,000 streams do (smaller sizes are mostly the fixed cost
of a flow run)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from episodic.bench.corpus import bench_env, dialogues, ingest, machine, report, target
from episodic.ingest.kinds import derive_kind
from episodic.models import Role, TurnIn

if TYPE_CHECKING:
    from episodic.service.memory import Memory

SIZES = (10, 100, 1_000, 10_000)
TURNS_PER_STREAM = 3
USER = "user-000"
# one stream of 600 turns against 200 streams of 3 (issue 12's target)
RATIO_STREAMS = 200
RATIO_TARGET = 3.0
# per-stream cost at the largest size / at 1,000 streams (below ~1,000 the
# fixed cost of a flow run, a second or two, is most of the per-stream figure)
FLAT_TARGET = 1.5


def _texts() -> Callable[[int, int], str]:
    """Utterance j of dialogue i, from the public dialogues when present."""
    try:
        dials = dialogues()
    except FileNotFoundError:
        dials = []
    if not dials:
        return lambda i, j: f"topic {i % 97} question {j} about item {i}"
    return lambda i, j: dials[i % len(dials)][j % len(dials[i % len(dials)])]


def stream_turns(
    streams: int,
    per_stream: int,
    *,
    first: int = 0,
    start: datetime | None = None,
    tag: str = "",
) -> list[TurnIn]:
    """`per_stream` turns on each of `streams` streams of one user, one minute
    apart; `first` is the index of each stream's first new turn."""
    text = _texts()
    t0 = start or datetime(2025, 1, 6, 8, 0, tzinfo=UTC)
    out: list[TurnIn] = []
    for s in range(streams):
        for j in range(first, first + per_stream):
            role: Role = "user" if j % 2 == 0 else "assistant"
            body = text(s, j)
            out.append(
                TurnIn(
                    user_id=USER,
                    stream_id=f"stream-{s:05d}",
                    role=role,
                    kind=derive_kind(role, body),
                    text=body,
                    event_ts=t0 + timedelta(minutes=j),
                    source="bench-streams",
                    position=f"{tag}{s}:{j}",
                )
            )
    return out


def _timed(fn: Callable[[], dict[str, Any]]) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def streams_case(
    memory: Memory, streams: int, per_stream: int = TURNS_PER_STREAM
) -> dict[str, Any]:
    """The three polls over `streams` streams in `memory`, a fresh store (see the module)."""
    rt = memory.rt
    memory.consolidate("nobody")  # Prefect's API up before the clock starts
    ingest(rt.raw, stream_turns(streams, per_stream))
    first_s, first = _timed(lambda: memory.consolidate(USER))
    ingest(rt.raw, stream_turns(streams, per_stream, first=per_stream, tag="b"))
    second_s, second = _timed(lambda: memory.consolidate(USER))
    flush_s, flushed = _timed(lambda: memory.consolidate(USER, flush=True))
    versions = rt.store.versions("segmenter_state")
    return {
        "streams": streams,
        "turns": streams * per_stream * 2,
        "seconds": {
            "first": round(first_s, 3),
            "second": round(second_s, 3),
            "flush": round(flush_s, 3),
        },
        "ms_per_stream": {
            "first": round(1000 * first_s / streams, 3),
            "second": round(1000 * second_s / streams, 3),
            "flush": round(1000 * flush_s / streams, 3),
        },
        "turns_processed": first["turns_processed"] + second["turns_processed"],
        "episodes_closed": flushed["episodes_closed"]
        + first["episodes_closed"]
        + second["episodes_closed"],
        "segmenter_state_versions": versions,
    }


def ratio_case(streams: int = RATIO_STREAMS, per_stream: int = TURNS_PER_STREAM) -> dict[str, Any]:
    """Seconds to consolidate (with flush) `streams` x `per_stream` turns, and
    the same number of turns on one stream; each in its own fresh store."""
    out: dict[str, Any] = {}
    for name, (n, k) in (("many", (streams, per_stream)), ("one", (1, streams * per_stream))):
        with bench_env("hash") as memory:
            memory.consolidate("nobody")
            ingest(memory.rt.raw, stream_turns(n, k))
            secs, summary = _timed(lambda: memory.consolidate(USER, flush=True))
            out[name] = {
                "streams": n,
                "turns": n * k,
                "seconds": round(secs, 3),
                "episodes": summary["episodes_closed"],
            }
    out["ratio"] = round(out["many"]["seconds"] / out["one"]["seconds"], 3)
    return out


def bench_streams(sizes: tuple[int, ...] = SIZES, embedder: str = "hash") -> dict[str, Any]:
    cases = []
    for n in sizes:
        with bench_env(embedder) as memory:
            cases.append(streams_case(memory, n))
    ratio = ratio_case()
    res: dict[str, Any] = {
        "benchmark": "streams",
        "embedder": embedder,
        "turns_per_stream": TURNS_PER_STREAM,
        "cases": cases,
        "ratio_200x3_over_1x600": ratio,
        "machine": machine(),
    }
    targets: dict[str, Any] = {"ratio_200x3_over_1x600": target(ratio["ratio"], "<=", RATIO_TARGET)}
    base = next((c for c in cases if c["streams"] == 1_000), cases[0])
    big = cases[-1]
    if big is not base:
        for poll in ("first", "second", "flush"):
            flat = big["ms_per_stream"][poll] / max(base["ms_per_stream"][poll], 1e-9)
            key = f"per_stream_{poll}_{big['streams']}_over_{base['streams']}"
            targets[key] = target(flat, "<=", FLAT_TARGET)
    res["targets"] = targets
    report("streams", res)
    return res
