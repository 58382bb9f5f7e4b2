"""The scale-out path, run: PostgreSQL in a temporary cluster, `prefect server
start` on it, a process work pool, the deployments of deployments/prefect.yaml
and N `prefect worker start` processes, all on 127.0.0.1 with free ports.

`scale_out(workers=(1, 2))` consolidates one many-user corpus with each worker
count (one `consolidate-user` run per user, from the deployment) and reports
turns/s, lost turns, duplicate rows, overlapping runs of one user (read from
Prefect's run history) and, with `kill=True`, the recovery after a SIGKILL of a
running flow run's process: Prefect marks it Crashed, a new run of that user
completes, and the end state is compared with the uninterrupted pass.

Every process is started in its own session and stopped (SIGTERM, then
SIGKILL) on the way out; the temporary folder is removed.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.servers import (
    BIN,
    child_env,
    free_port,
    prefect_server_cmd,
    run_checked,
    start,
    stop,
    wait_healthy,
)

POOL = "episodic-pool"
DEPLOYMENT = "consolidate/consolidate-user"
TOPICS = [
    "the login endpoint returns 401 after the token refresh",
    "deploy the service to the staging cluster with helm",
    "add retry logging with exponential backoff to the http client",
    "my dog Rex needs a vet appointment next week",
]
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def pg_bin(name: str) -> str:
    """Debian keeps initdb and pg_ctl in /usr/lib/postgresql/<v>/bin."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    path = found[-1] if found else shutil.which(name)
    if not path:
        raise RuntimeError(f"{name} not found: apt-get install postgresql")
    return path


def _as_pg_user(cmd: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run it as `postgres`."""
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", "postgres", "--", *cmd]


@contextmanager
def postgres() -> Iterator[str]:
    """A throwaway cluster on 127.0.0.1:<free port>; yields the asyncpg URL.
    Its folder sits directly in the system temp dir: as root the cluster runs
    as `postgres`, which must reach it (pytest's tmp_path is private)."""
    d = Path(tempfile.mkdtemp(prefix="episodic-pg-"))
    d.chmod(0o700)
    if os.geteuid() == 0:
        shutil.chown(d, "postgres")
    data, port = d / "data", free_port()
    run = subprocess.run
    run(
        _as_pg_user([pg_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "episodic"])
        + ["--no-sync", "-E", "UTF8"],
        check=True,
        capture_output=True,
    )
    opts = f"-h 127.0.0.1 -p {port} -k {d} -c fsync=off -c max_connections=200"
    run(
        _as_pg_user([pg_bin("pg_ctl"), "-D", str(data), "-l", str(d / "log"), "-w"])
        + ["-t", "120", "-o", opts, "start"],
        check=True,
        capture_output=True,
    )
    try:
        run(
            _as_pg_user([pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(port)])
            + ["-U", "episodic", "prefect"],
            check=True,
            capture_output=True,
        )
        yield f"postgresql+asyncpg://episodic@127.0.0.1:{port}/prefect"
    finally:
        run(
            _as_pg_user([pg_bin("pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
            capture_output=True,
        )
        shutil.rmtree(d, ignore_errors=True)


def base_env(tmp: Path, api_url: str | None = None) -> dict[str, str]:
    """A child's environment in `tmp`, with workers that poll every 2 s."""
    return child_env(
        tmp, api_url, PREFECT_WORKER_QUERY_SECONDS="2", PREFECT_WORKER_PREFETCH_SECONDS="5"
    )


def halt(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 20 s, to the process and its session."""
    stop(proc, int_s=None, term_s=20.0)


@dataclass
class Stack:
    tmp: Path
    api_url: str
    db_url: str
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        return base_env(self.tmp, self.api_url)

    def prefect(self, *args: str, timeout: float = 600) -> str:
        return run_checked([str(BIN / "prefect"), *args], self.env(), timeout).stdout

    def start_worker(self, i: int) -> subprocess.Popen[bytes]:
        cmd = [str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--limit", "1"]
        cmd += ["--name", f"worker-{i}-{len(self.workers)}"]
        w = start(cmd, self.env(), self.tmp / f"worker-{i}-{len(self.workers)}.log")
        self.workers.append(w)
        return w

    def halt_workers(self) -> None:
        for w in self.workers:
            halt(w)


@contextmanager
def stack(tmp: Path, startup_s: float = 300.0) -> Iterator[Stack]:
    """PostgreSQL, a Prefect server on it, the work pool and the deployments
    of deployments/prefect.yaml with their schedules paused (runs are made by
    the caller). Workers are started with Stack.start_worker."""
    with ExitStack() as es:
        db_url = es.enter_context(postgres())
        port = free_port()
        env = base_env(tmp)
        env["PREFECT_API_DATABASE_CONNECTION_URL"] = db_url
        env["PREFECT_SERVER_API_HOST"] = "127.0.0.1"
        env["PREFECT_SERVER_API_PORT"] = str(port)
        env["PREFECT_UI_ENABLED"] = "false"
        log = tmp / "server.log"
        server = start([*prefect_server_cmd(port), "--no-ui"], env, log)
        es.callback(halt, server)
        url = f"http://127.0.0.1:{port}/api"
        wait_healthy(f"{url}/health", server, startup_s, log)
        st = Stack(tmp, url, db_url)
        es.callback(st.halt_workers)
        st.prefect("work-pool", "create", POOL, "--type", "process", "--overwrite")
        st.prefect("--no-prompt", "deploy", "--all", "--prefect-file", "deployments/prefect.yaml")
        with _client(url) as c:  # runs come from the caller, not the schedules
            for name in ("consolidate/consolidate", "reflect/reflect", "maintain/maintain"):
                c.pause_deployment(c.read_deployment_by_name(name).id)
        yield st


def synthetic_corpus(users: int, streams: int, turns: int) -> list[dict[str, Any]]:
    """`users` x `streams` streams of `turns` turns over a few topics."""
    out: list[dict[str, Any]] = []
    t0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
    for u in range(users):
        for s in range(streams):
            for i in range(turns):
                topic = TOPICS[(i * len(TOPICS)) // turns]
                out.append(
                    {
                        "user_id": f"user-{u:03d}",
                        "stream_id": f"s{s}",
                        "role": "user" if i % 2 == 0 else "assistant",
                        "text": f"{topic}: step {i} of stream {s}",
                        "ts": (t0 + timedelta(minutes=2 * i)).isoformat(),
                    }
                )
    return out


def ingest_corpus(db_uri: str, rows: list[dict[str, Any]], tmp: Path) -> dict[str, int]:
    from episodic.config import load_settings
    from tasks.ingest import ingest_file
    from tasks.runtime import use_runtime

    path = tmp / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    settings = load_settings().model_copy(
        update={"db_uri": db_uri, "embedder": "hash", "llm": "offline"}
    )
    with use_runtime(settings) as rt:
        rep = ingest_file(rt.raw, path, "jsonl")
    return {"accepted": rep.accepted}


def end_state(db_uri: str, users: list[str]) -> dict[str, Any]:
    """Per user, the episodes as (stream, first seq, last seq); lost turns
    (raw seqs in no episode) and duplicates (seqs in more than one)."""
    from collections import Counter

    from episodic.config import load_settings
    from tasks.runtime import use_runtime

    settings = load_settings().model_copy(
        update={"db_uri": db_uri, "embedder": "hash", "llm": "offline"}
    )
    lost = dup = 0
    episodes: dict[str, list[tuple[str, int, int]]] = {}
    with use_runtime(settings) as rt:
        heads = {(h.user_id, h.stream_id): h.head_seq for h in rt.raw.streams(None)}
        for u in users:
            eps = sorted((e.stream_id, e.first_seq, e.last_seq) for e in rt.episodes.list(u))
            episodes[u] = eps
            seen: Counter[tuple[str, int]] = Counter(
                (s, q) for s, a, b in eps for q in range(a, b + 1)
            )
            dup += sum(c - 1 for c in seen.values() if c > 1)
            for (uid, sid), head in heads.items():
                if uid == u:
                    lost += sum(1 for q in range(head + 1) if (sid, q) not in seen)
    return {"episodes": episodes, "lost": lost, "duplicates": dup}


def reference_state(api_url: str, db_uri: str, users: list[str]) -> dict[str, Any]:
    """The uninterrupted end state: each user consolidated in this process,
    one after another, against the same server (no worker involved)."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from episodic.config import load_settings
    from flows.consolidate import consolidate
    from tasks.runtime import use_runtime

    settings = load_settings().model_copy(
        update={"db_uri": db_uri, "embedder": "hash", "llm": "offline"}
    )
    with temporary_settings({PREFECT_API_URL: api_url}), use_runtime(settings):
        for u in users:
            consolidate(user=u, flush=True)
    return end_state(db_uri, users)


def _client(api_url: str) -> Any:
    from prefect.client.orchestration import SyncPrefectClient

    return SyncPrefectClient(api_url)


def run_users(
    st: Stack, users: list[str], db_uri: str, *, kill_after_s: float | None = None
) -> dict[str, Any]:
    """One consolidate-user run per user (flush), through the workers; with
    kill_after_s, SIGKILL the first running flow-run process after that long,
    wait for Prefect to mark it Crashed and run that user again."""
    env = {"EPISODIC_DB_URI": db_uri, "EPISODIC_EMBEDDER": "hash", "EPISODIC_LLM": "offline"}
    started = time.monotonic()
    killed: dict[str, Any] | None = None
    with _client(st.api_url) as c:
        dep = c.read_deployment_by_name(DEPLOYMENT)

        def submit(u: str) -> Any:
            return c.create_flow_run_from_deployment(
                dep.id, parameters={"user": u, "flush": True}, job_variables={"env": env}
            ).id

        runs = {submit(u): u for u in users}
        pending = set(runs)
        while pending:
            time.sleep(1)
            for rid in list(pending):
                fr = c.read_flow_run(rid)
                state = fr.state.type.value if fr.state else ""
                if (
                    kill_after_s is not None
                    and killed is None
                    and state == "RUNNING"
                    and time.monotonic() - started > kill_after_s
                    and fr.infrastructure_pid
                ):
                    pid = int(str(fr.infrastructure_pid).rsplit(":", 1)[-1])
                    os.kill(pid, signal.SIGKILL)
                    killed = {"run": rid, "user": runs[rid], "at": time.monotonic()}
                if state in TERMINAL:
                    pending.discard(rid)
                    if killed and rid == killed["run"]:
                        killed["state"] = state
                        killed["marked_s"] = round(time.monotonic() - killed["at"], 1)
                        again = submit(runs[rid])
                        runs[again] = runs[rid]
                        pending.add(again)
                        killed["rerun"] = again
                    elif killed and rid == killed.get("rerun"):
                        killed["recovered_s"] = round(time.monotonic() - killed["at"], 1)
                        killed["rerun_state"] = state
        wall = time.monotonic() - started
        history = [c.read_flow_run(rid) for rid in runs]
    states = {str(fr.id): fr.state.type.value for fr in history if fr.state}
    return {
        "seconds": round(wall, 2),
        "runs": len(runs),
        "states": dict(sorted(_count(states.values()).items())),
        "overlaps": overlaps([(runs[fr.id], fr.start_time, fr.end_time) for fr in history]),
        "killed": None
        if killed is None
        else {k: str(v) if k in ("run", "rerun") else v for k, v in killed.items() if k != "at"},
    }


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def overlaps(runs: list[tuple[str, datetime | None, datetime | None]]) -> int:
    """Pairs of one user's runs whose [start, end] intervals intersect."""
    n = 0
    by: dict[str, list[tuple[datetime, datetime]]] = {}
    for user, a, b in runs:
        if a is not None and b is not None:
            by.setdefault(user, []).append((a, b))
    for spans in by.values():
        spans.sort()
        for i in range(len(spans)):
            for j in range(i + 1, len(spans)):
                if spans[j][0] < spans[i][1]:
                    n += 1
    return n


def scale_out(
    workers: tuple[int, ...] = (1, 2),
    users: int = 6,
    streams: int = 2,
    turns: int = 60,
    kill: bool = True,
    tmp: Path | None = None,
    clean: bool = True,
) -> dict[str, Any]:
    """The figures of `episodic bench scale-out --json`."""
    base = Path(tempfile.mkdtemp(prefix="episodic-scale-", dir=tmp))
    rows = synthetic_corpus(users, streams, turns)
    names = sorted({r["user_id"] for r in rows})
    out: dict[str, Any] = {"users": users, "streams": users * streams, "turns": len(rows)}
    try:
        with stack(base) as st:
            ref_db = str(base / "lancedb-reference")
            ingest_corpus(ref_db, rows, base)
            ref = reference_state(st.api_url, ref_db, names)
            reference = ref["episodes"]
            out["reference"] = {"lost": ref["lost"], "duplicates": ref["duplicates"]}
            passes = []
            cases = [(n, False) for n in workers if clean]
            cases += [(max(workers), True)] if kill else []
            for n, with_kill in cases:
                while len([w for w in st.workers if w.poll() is None]) < n:
                    st.start_worker(len(st.workers))
                for w in st.workers[n:]:
                    halt(w)
                st.workers = st.workers[:n]
                db = str(base / f"lancedb-{n}-{'kill' if with_kill else 'clean'}")
                ingest_corpus(db, rows, base)
                res = run_users(st, names, db, kill_after_s=5.0 if with_kill else None)
                state = end_state(db, names)
                res.update(
                    workers=n,
                    kill=with_kill,
                    turns_per_s=round(len(rows) / res["seconds"], 1),
                    lost=state["lost"],
                    duplicates=state["duplicates"],
                    equals_reference=state["episodes"] == reference,
                )
                passes.append(res)
            out["passes"] = passes
    finally:
        shutil.rmtree(base, ignore_errors=True)
    out["lost"] = sum(p["lost"] for p in out["passes"])
    out["duplicates"] = sum(p["duplicates"] for p in out["passes"])
    out["overlaps"] = sum(p["overlaps"] for p in out["passes"])
    return out


if __name__ == "__main__":
    ws = tuple(int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "1,2").split(","))
    print(json.dumps(scale_out(ws), indent=2, default=str))
