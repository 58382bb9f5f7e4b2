"""`episodic bench api`: the HTTP API under load on loopback.

A real `episodic api` subprocess on 127.0.0.1 and a fresh home; `clients`
threads each post `batch`-turn batches (one keep-alive connection each) until
their share of `turns` is sent or `seconds` pass, while another thread posts
/v1/consolidate in a loop. One batch in 5 is sent twice (a retry): those
turns must come back as duplicates. Afterwards raw is read back: turns lost
(accepted but not stored) and turns stored twice. Then the kill phase
(`api_kills`): the API SIGKILLed mid-batch and restarted while clients retry
with their Idempotency-Keys. Between the two, the paced phase (`paced`):
batches offered at 5,000 turns/s in an open loop, consolidation still
running; the latency target is judged there.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from episodic.bench.api_kills import batch_of, kill_phase
from episodic.bench.servers import ROOT, free_port, start, stop, wait_healthy

API_STOP_S = 30.0  # SIGTERM, then SIGKILL after this long
PACED_TURNS_PER_S = 5000.0  # the rate: the latency target holds at it
PACED_WORKERS = 16  # connections the open loop may have in flight


def _start(home: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = dict(os.environ)
    env.update(
        {
            "EPISODIC_HOME": str(home),
            "EPISODIC_EMBEDDER": env.get("EPISODIC_EMBEDDER", "hash"),
            "EPISODIC_LLM": "offline",
            "PYTHONPATH": str(ROOT),
        }
    )
    env.pop("PREFECT_API_URL", None)
    cmd = [
        sys.executable,
        "-c",
        "from episodic.adapters.cli.main import main; main()",
        "api",
        "--port",
        str(port),
    ]
    log = home / "api.log"
    proc = start(cmd, env, log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(f"{url}/healthz", proc, 180.0, log, poll_s=0.2)
    except BaseException:
        stop(proc, int_s=None, term_s=API_STOP_S)
        raise
    return proc, url


def bench_api(
    turns: int = 24_000, clients: int = 8, batch: int = 100, seconds: float = 60.0, kills: int = 3
) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="episodic-bench-api-"))
    try:
        return _bench_in(home, turns, clients, batch, seconds, kills)
    finally:
        shutil.rmtree(home, ignore_errors=True)  # 60 MB a run


def paced(url: str, headers: dict[str, str], turns: int, batch: int, rate: float) -> dict[str, Any]:
    """Batches offered at `rate` turns/s whatever the answers (an open loop):
    each latency counts from the batch's scheduled start, so a stall shows
    in every batch it delays. The closed loop above measures the most the
    API takes; with its clients waiting on their answers, its latency is
    the clients in flight over throughput, not what a caller at a given
    rate waits."""
    n = max(1, turns // batch)
    gap = batch / rate
    todo: queue.Queue[tuple[float, int] | None] = queue.Queue()
    lat: list[float] = []
    answered = {"accepted": 0, "errors": 0}
    lock = threading.Lock()

    ready = threading.Barrier(PACED_WORKERS + 1)

    def worker() -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=60) as h:
            h.get("/healthz")  # connected (and the client built) before the clock starts
            ready.wait()
            while (item := todo.get()) is not None:
                due, i = item
                time.sleep(max(0.0, due - time.perf_counter()))
                r = h.post(
                    "/v1/turns", json={"turns": batch_of(i % 8, i // 8, batch, stream="paced")}
                )
                dt = time.perf_counter() - due
                with lock:
                    lat.append(dt)
                    if r.status_code == 200:
                        answered["accepted"] += r.json()["accepted"]
                    else:
                        answered["errors"] += 1

    pool = [threading.Thread(target=worker) for _ in range(PACED_WORKERS)]
    for w in pool:
        w.start()
    ready.wait()
    t0 = time.perf_counter() + 0.05
    for i in range(n):
        todo.put((t0 + i * gap, i))
    for _ in pool:
        todo.put(None)
    for w in pool:
        w.join()
    wall = time.perf_counter() - t0
    ms = np.asarray(lat) * 1000.0
    return {
        "offered_turns_per_s": rate,
        "batches": n,
        "answered_turns_per_s": round(n * batch / wall, 1),
        "accepted": answered["accepted"],
        "errors": answered["errors"],
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p99_ms": round(float(np.percentile(ms, 99)), 2),
        "max_ms": round(float(ms.max()), 2),
    }


def _bench_in(
    home: Path, turns: int, clients: int, batch: int, seconds: float, kills: int
) -> dict[str, Any]:
    from episodic.bench.corpus import machine, report, target
    from storage.db import Store
    from storage.keys import ApiKeys

    proc, url = _start(home)
    key = ApiKeys(Store(str(home / "lancedb"))).create("bench")[0]
    headers = {"Authorization": f"Bearer {key}"}
    per_client = max(1, turns // (clients * batch))
    lat: list[float] = []
    counts = {"accepted": 0, "duplicates": 0, "resent": 0, "errors": 0, "batches": 0}
    lock = threading.Lock()
    done = threading.Event()
    consolidations: list[float] = []

    def client(c: int) -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=60) as h:
            for n in range(per_client):
                if done.is_set():
                    return
                body = {"turns": batch_of(c, n, batch)}
                sends = 2 if n % 5 == 4 else 1
                for _ in range(sends):
                    t = time.perf_counter()
                    r = h.post("/v1/turns", json=body)
                    dt = time.perf_counter() - t
                    with lock:
                        counts["batches"] += 1
                        lat.append(dt)
                        if r.status_code != 200:
                            counts["errors"] += 1
                            continue
                        out = r.json()
                        counts["accepted"] += out["accepted"]
                        counts["duplicates"] += out["duplicates"]
                with lock:
                    counts["resent"] += batch * (sends - 1)

    def consolidate() -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=600) as h:
            while not done.is_set():
                t = time.perf_counter()
                r = h.post("/v1/consolidate")
                if r.status_code == 200:
                    consolidations.append(time.perf_counter() - t)
                done.wait(0.5)

    bg = threading.Thread(target=consolidate, daemon=True)
    workers = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    try:
        bg.start()
        t0 = time.perf_counter()
        for w in workers:
            w.start()
        timer = threading.Timer(seconds, done.set)
        timer.start()
        for w in workers:
            w.join()
        wall = time.perf_counter() - t0
        timer.cancel()
        paced_res = paced(url, headers, turns, batch, PACED_TURNS_PER_S)
        done.set()
        bg.join(timeout=600)
        with httpx.Client(base_url=url, headers=headers, timeout=60) as h:
            status = h.get("/v1/status").json()
    finally:
        stop(proc, int_s=None, term_s=API_STOP_S)
    tbl = Store(str(home / "lancedb")).table("raw_turns").to_arrow()
    ids = tbl.column("turn_id").to_pylist()
    stored = len(ids)
    killed = kill_phase(home, _start, headers, kills=kills) if kills else None
    ms = np.asarray(lat) * 1000.0
    res: dict[str, Any] = {
        "clients": clients,
        "batch": batch,
        "batches_posted": counts["batches"],
        "seconds": round(wall, 3),
        "accepted": counts["accepted"],
        "turns_per_s": round(counts["accepted"] / wall, 1) if wall else None,
        "p50_ms": round(float(np.percentile(ms, 50)), 2) if len(ms) else None,
        "p99_ms": round(float(np.percentile(ms, 99)), 2) if len(ms) else None,
        "max_ms": round(float(ms.max()), 2) if len(ms) else None,
        "errors": counts["errors"],
        "resent_turns": counts["resent"],
        "duplicates_reported": counts["duplicates"],
        "stored_turns": stored,
        "lost": counts["accepted"] + paced_res["accepted"] - stored,
        "stored_twice": stored - len(set(ids)),
        "status_raw_turns": sum(s["raw_turns"] for s in status),
        "paced": paced_res,
        "consolidate_runs": len(consolidations),
        "consolidate_median_s": round(float(np.median(consolidations)), 3)
        if consolidations
        else None,
        "kill_phase": killed,
        "machine": machine(),
    }
    res["targets"] = {
        "turns_per_s": target(res["turns_per_s"], ">=", 5000.0),
        "paced_p99_ms": target(paced_res["p99_ms"], "<=", 100.0),
        "paced_turns_per_s": target(
            paced_res["answered_turns_per_s"], ">=", 0.98 * PACED_TURNS_PER_S
        ),
        "lost": target(float(res["lost"]), "<=", 0.0),
        "stored_twice": target(float(res["stored_twice"]), "<=", 0.0),
        "duplicates_equal_resent": target(
            float(abs(res["duplicates_reported"] - res["resent_turns"])), "<=", 0.0
        ),
    }
    if killed is not None:
        for name in ("lost", "stored_twice", "accepted_minus_stored", "batches_given_up"):
            res["targets"][f"kill_phase_{name}"] = target(float(abs(killed[name])), "<=", 0.0)
    report("api", res)
    return res
