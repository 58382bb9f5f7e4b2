"""The kill phase of `episodic bench api`: clients post batches, each with an
Idempotency-Key, while the API process is SIGKILLed and restarted on the
same store; a client whose request fails retries the same batch with the
same key until an API answers. Afterwards raw is read back: every answered
turn must be stored once, and the answers' accepted counts must add up to
what raw holds (a retry of a write that was journaled but never answered
gets the first answer, not a second write)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx

RETRY_S = 0.2  # between a client's retries while the API is down
GIVE_UP_S = 300.0  # a batch no API answers for this long is counted and dropped


def kill_phase(
    home: Path,
    start: Any,
    headers: dict[str, str],
    *,
    kills: int = 3,
    clients: int = 4,
    batches: int = 30,
    batch: int = 100,
) -> dict[str, Any]:
    """`start(home) -> (proc, url)` starts an API on `home`; returns the counts."""
    from storage.db import Store

    proc, url = start(home)
    state = {"url": url}
    answers: list[dict[str, Any]] = []
    failures = {"retries": 0, "given_up": 0}
    lock = threading.Lock()

    def client(c: int) -> None:
        with httpx.Client(headers=headers, timeout=30) as h:
            for n in range(batches):
                body = {"turns": batch_of(c, n, batch, stream="kill", t0=10_000_000)}
                key = {"Idempotency-Key": f"kill-{c}-{n}"}
                deadline = time.monotonic() + GIVE_UP_S
                while True:
                    try:
                        r = h.post(f"{state['url']}/v1/turns", json=body, headers=key)
                        if r.status_code == 200:
                            with lock:
                                answers.append(r.json())
                            break
                    except httpx.HTTPError:
                        pass
                    with lock:
                        failures["retries"] += 1
                        if time.monotonic() > deadline:
                            failures["given_up"] += 1
                            return
                    time.sleep(RETRY_S)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    made = 0
    try:
        total = clients * batches
        while made < kills and any(t.is_alive() for t in threads):
            # spread over the run: the next kill once its share of batches is answered
            if len(answers) < (made + 1) * total // (kills + 1):
                time.sleep(0.01)
                continue
            os.killpg(proc.pid, signal.SIGKILL)  # the API and its children, mid-batch
            proc.wait()
            made += 1
            proc, state["url"] = start(home)
        for t in threads:
            t.join()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    tbl = Store(str(home / "lancedb")).table("raw_turns").to_arrow()
    streams = tbl.column("stream_id").to_pylist()
    ids = [
        t
        for t, s in zip(tbl.column("turn_id").to_pylist(), streams, strict=True)
        if s.startswith("kill-")
    ]
    stored = set(ids)
    answered = {t for a in answers for t in a["turn_ids"]}
    return {
        "kills": made,
        "batches_answered": len(answers),
        "client_retries": failures["retries"],
        "batches_given_up": failures["given_up"],
        "accepted_reported": sum(a["accepted"] for a in answers),
        "stored_turns": len(ids),
        "lost": len(answered - stored),
        "stored_twice": len(ids) - len(stored),
        "accepted_minus_stored": sum(a["accepted"] for a in answers) - len(ids),
    }


def batch_of(
    client: int, n: int, size: int, *, stream: str = "client", t0: int = 0
) -> list[dict[str, Any]]:
    """Batch `n` of a bench client: `size` turns of its own stream, alternating roles."""
    start = 1_750_000_000 + t0 + client * 1_000_000 + n * size
    return [
        {
            "stream_id": f"{stream}-{client}",
            "role": "user" if i % 2 == 0 else "assistant",
            "text": f"{stream} {client} batch {n} turn {i}: deploy notes and a retry policy",
            "ts": start + i,
        }
        for i in range(size)
    ]
