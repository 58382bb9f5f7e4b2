"""`episodic bench api`: the HTTP API under load on loopback.

A real `episodic api` subprocess on 127.0.0.1 and a fresh home; `clients`
threads each post `batch`-turn batches (one keep-alive connection each) until
their share of `turns` is sent or `seconds` pass, while another thread posts
/v1/consolidate in a loop. One batch in 5 is sent twice (a retry): those
turns must come back as duplicates. Afterwards raw is read back: turns lost
(accepted but not stored) and turns stored twice. Then the kill phase
(`api_kills`): the API SIGKILLed mid-batch and restarted while clients retry
with their Idempotency-Keys.
"""

from __future__ import annotations

import os
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
        "lost": counts["accepted"] - stored,
        "stored_twice": stored - len(set(ids)),
        "status_raw_turns": sum(s["raw_turns"] for s in status),
        "consolidate_runs": len(consolidations),
        "consolidate_median_s": round(float(np.median(consolidations)), 3)
        if consolidations
        else None,
        "kill_phase": killed,
        "machine": machine(),
    }
    res["targets"] = {
        "turns_per_s": target(res["turns_per_s"], ">=", 5000.0),
        "p99_ms": target(res["p99_ms"], "<=", 100.0),
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
