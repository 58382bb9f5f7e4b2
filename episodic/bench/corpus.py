"""Turns for the benchmarks, built from the public dialogues in ../shared/data
(DialSeg711, TIAGE, LoCoMo utterances) with synthesized timestamps, plus the
plumbing every benchmark shares: a throwaway store, machine facts, a target
check and a printed report.

Dialogues are dealt round-robin to `users` x `streams` streams; inside a
dialogue turns are 20 to 90 s apart, between dialogues 5 minutes to 8 hours
(so some gaps cut on time, most must be found by content). Past the end of the
data the dialogues are dealt again, under new positions, so any number of
distinct turns can be made."""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from episodic.ingest.kinds import derive_kind
from episodic.models import Role, TurnIn

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"  # ../shared/data
SOURCE = "bench"

if TYPE_CHECKING:
    from episodic.config import Settings
    from episodic.service.memory import Memory


def data_dir() -> Path:
    from episodic.config import load_settings

    return load_settings().shared_data or DATA


def dialogues() -> list[list[str]]:
    """Every dialogue of the three sets, as lists of utterances (interleaved by set)."""
    from episodic.bench.datasets import load_dialseg711, load_tiage

    root = data_dir()
    sets: list[list[list[str]]] = []
    seg = root / "dialseg711" / "dialseg_711.json"
    if seg.exists():
        sets.append([list(d.utterances) for d in load_dialseg711(seg)])
    tiage = root / "tiage"
    if (tiage / "anno_train.json").exists() and (tiage / "anno_dev.json").exists():
        sets.append([list(d.utterances) for d in load_tiage(tiage)])
    locomo = root / "locomo" / "locomo_dev5.json"
    if locomo.exists():
        sets.append(_locomo_sessions(locomo))
    if not sets:
        raise FileNotFoundError(f"no public dialogues under {root} (see ../shared/data/README.md)")
    out: list[list[str]] = []
    for i in range(max(len(s) for s in sets)):
        out.extend(s[i] for s in sets if i < len(s))
    return [d for d in out if d]


def _locomo_sessions(path: Path) -> list[list[str]]:
    out = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        for key in sorted(k for k in conv if k.startswith("session_") and k[8:].isdigit()):
            texts = [str(t.get("text") or "").strip() for t in conv[key] or []]
            out.append([t for t in texts if t])
    return out


def realistic_turns(
    n: int,
    *,
    users: int = 10,
    streams: int = 2,
    seed: int = 0,
    start: datetime | None = None,
    tag: str = "",
) -> list[TurnIn]:
    """`n` turns dealt over users x streams, in event order per stream."""
    dials = dialogues()
    rng = random.Random(seed)
    keys = [(f"user-{u:03d}", f"stream-{s}") for u in range(users) for s in range(streams)]
    clock = {k: start or datetime(2025, 1, 6, 8, 0, tzinfo=UTC) for k in keys}
    out: list[TurnIn] = []
    d = 0
    while len(out) < n:
        key = keys[d % len(keys)]
        utts = dials[d % len(dials)]
        rnd = d // len(dials)
        ts = clock[key] + timedelta(minutes=rng.uniform(5, 480))
        for i, text in enumerate(utts):
            if len(out) >= n:
                break
            role: Role = "user" if i % 2 == 0 else "assistant"
            out.append(
                TurnIn(
                    user_id=key[0],
                    stream_id=key[1],
                    role=role,
                    kind=derive_kind(role, text),
                    text=text,
                    event_ts=ts,
                    source=SOURCE,
                    position=f"{tag}{d}:{rnd}:{i}",
                )
            )
            ts += timedelta(seconds=rng.uniform(20, 90))
        clock[key] = ts
        d += 1
    return out


def ingest(raw: Any, turns: list[TurnIn], batch: int = 20_000) -> float:
    """Append in big batches; returns seconds."""
    t0 = time.perf_counter()
    for i in range(0, len(turns), batch):
        raw.append(turns[i : i + batch])
    return time.perf_counter() - t0


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"cpu_count": os.cpu_count()}
    try:
        info["cpu_affinity"] = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        pass
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
    except ImportError:
        info["torch_threads"] = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/proc/loadavg", encoding="utf-8") as fh:
            info["load_avg_1m"] = float(fh.read().split()[0])
    except OSError:
        pass
    return info


def target(value: float | None, op: str, bound: float) -> dict[str, Any]:
    """A figure beside its target: op is '<=' or '>='."""
    if value is None:
        return {"value": None, "target": f"{op} {bound}", "met": None}
    met = value <= bound if op == "<=" else value >= bound
    return {"value": round(value, 4), "target": f"{op} {bound}", "met": bool(met)}


def report(name: str, res: dict[str, Any]) -> None:
    """One line per target on stderr, so --json stdout stays clean."""
    import sys

    lines = [f"[bench {name}] machine: {res.get('machine')}"]
    for key, t in (res.get("targets") or {}).items():
        mark = {True: "ok", False: "MISSED", None: "n/a"}[t["met"]]
        lines.append(f"[bench {name}] {key}: {t['value']} (target {t['target']}) {mark}")
    sys.stderr.write("\n".join(lines) + "\n")


def open_memory(settings: Settings, **kw: Any) -> Memory:
    """The memory service on `settings`, consolidating through the flow in
    this process (`memory.consolidate(...)`, as a user's call does)."""
    from episodic.adapters.embedded import Memory as Embedded

    return Embedded(settings, **kw)


def bench_settings(db_uri: str | Path, embedder: str = "hash") -> Settings:
    """The settings a benchmark's store uses: `db_uri`, `embedder`, the offline provider."""
    from episodic.config import load_settings

    update = {"db_uri": str(db_uri), "embedder": embedder, "llm": "offline"}
    return load_settings().model_copy(update=update)


@contextmanager
def bench_env(embedder: str, home: Path | None = None) -> Iterator[Memory]:
    """A memory on a throwaway LanceDB directory (deleted after the block),
    handed to whatever the block runs; the environment is left alone."""
    tmp = Path(tempfile.mkdtemp(prefix="episodic-bench-", dir=home))
    try:
        with open_memory(bench_settings(tmp / "lancedb", embedder)) as memory:
            yield memory
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
