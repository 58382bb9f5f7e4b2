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

from episodic.bench.servers import (
    BIN,
    child_env,
    free_port,
    prefect_server_cmd,
    run_checked,
    start,
    stop,
    wait_healthy,
)
from tasks import automations
from tasks.exclusion import LEASE_S, limit_name

POOL = "episodic-pool"
DEPLOYMENT = "consolidate/consolidate-user"
TOPICS = [
    "the login endpoint returns 401 after the token refresh",
    "deploy the service to the staging cluster with helm",
    "add retry logging with exponential backoff to the http client",
    "my dog Rex needs a vet appointment next week",
]
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
HEARTBEAT_S = 30  # Prefect's minimum; the zombie automation waits 3 of them
ZOMBIES = "episodic-crash-zombie-runs"  # in deployments/automations.yaml


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
    """A child's environment in `tmp`: workers poll every 2 s, flow runs send
    a heartbeat every 30 s (Prefect's minimum) for the zombie automation."""
    return child_env(
        tmp,
        api_url,
        PREFECT_WORKER_QUERY_SECONDS="2",
        PREFECT_WORKER_PREFETCH_SECONDS="5",
        PREFECT_FLOWS_HEARTBEAT_FREQUENCY=str(HEARTBEAT_S),
    )


def halt(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 20 s, to the process and its session."""
    stop(proc, int_s=None, term_s=20.0)


@dataclass
class Stack:
    tmp: Path
    api_url: str
    db_url: str
    port: int
    server: subprocess.Popen[bytes] | None = None
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    startup_s: float = 300.0
    started: int = 0

    def env(self) -> dict[str, str]:
        return base_env(self.tmp, self.api_url)

    def prefect(self, *args: str, timeout: float = 600) -> str:
        return run_checked([str(BIN / "prefect"), *args], self.env(), timeout).stdout

    def start_server(self) -> None:
        env = base_env(self.tmp)
        env["PREFECT_API_DATABASE_CONNECTION_URL"] = self.db_url
        env["PREFECT_SERVER_API_HOST"] = "127.0.0.1"
        env["PREFECT_SERVER_API_PORT"] = str(self.port)
        env["PREFECT_UI_ENABLED"] = "false"
        log = self.tmp / f"server-{time.monotonic_ns()}.log"
        self.server = start([*prefect_server_cmd(self.port), "--no-ui"], env, log)
        wait_healthy(f"{self.api_url}/health", self.server, self.startup_s, log)

    def stop_server(self) -> None:
        if self.server is not None:
            halt(self.server)
            self.server = None

    def restart_server(self) -> dict[str, Any]:
        """Stop the server (SIGTERM) and start it again on the same port and
        database; the seconds the API was away."""
        t0 = time.monotonic()
        self.stop_server()
        down = time.monotonic()
        self.start_server()
        return {"stop_s": round(down - t0, 1), "away_s": round(time.monotonic() - t0, 1)}

    def start_worker(self) -> subprocess.Popen[bytes]:
        """A new worker, named (and logged) by how many came before it."""
        name = f"worker-{self.started}"
        self.started += 1
        cmd = [str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--limit", "1"]
        w = start([*cmd, "--name", name], self.env(), self.tmp / f"{name}.log")
        self.workers.append(w)
        return w

    def halt_workers(self) -> None:
        for w in self.workers:
            halt(w)


@contextmanager
def stack(tmp: Path, startup_s: float = 300.0) -> Iterator[Stack]:
    """PostgreSQL, a Prefect server on it, the work pool and the deployments
    of deployments/prefect.yaml with their schedules paused (runs are made by
    the caller), and the zombie-run automation of deployments/automations.yaml.
    Workers are started with
    Stack.start_worker."""
    with ExitStack() as es:
        db_url = es.enter_context(postgres())
        port = free_port()
        st = Stack(tmp, f"http://127.0.0.1:{port}/api", db_url, port, startup_s=startup_s)
        es.callback(st.stop_server)
        st.start_server()
        es.callback(st.halt_workers)
        st.prefect("work-pool", "create", POOL, "--type", "process", "--overwrite")
        st.prefect("--no-prompt", "deploy", "--all", "--prefect-file", "deployments/prefect.yaml")
        with _client(st.api_url) as c:  # runs come from the caller, not the schedules
            for name in ("consolidate/consolidate", "reflect/reflect", "maintain/maintain"):
                c.pause_deployment(c.read_deployment_by_name(name).id)
        with _client(st.api_url) as c:  # a dead host's run is marked Crashed
            automations.apply(c, automations.build(automations.spec(), None, names={ZOMBIES}))
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
    from episodic.bench.corpus import bench_settings, open_memory

    path = tmp / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with open_memory(bench_settings(db_uri)) as memory:
        rep = memory.ingest(path, "jsonl")
    return {"accepted": rep.accepted}


def end_state(db_uri: str, users: list[str]) -> dict[str, Any]:
    """Per user, the episodes as (stream, first seq, last seq); lost turns
    (raw seqs in no episode) and duplicates (seqs in more than one)."""
    from collections import Counter

    from episodic.bench.corpus import bench_settings, open_memory

    lost = dup = 0
    episodes: dict[str, list[tuple[str, int, int]]] = {}
    with open_memory(bench_settings(db_uri)) as memory:
        rt = memory.rt
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

    from episodic.bench.corpus import bench_settings, open_memory

    with (
        temporary_settings({PREFECT_API_URL: api_url}),
        open_memory(bench_settings(db_uri)) as memory,
    ):
        for u in users:
            memory.consolidate(u, flush=True)
    return end_state(db_uri, users)


def _client(api_url: str) -> Any:
    from prefect.client.orchestration import SyncPrefectClient

    return SyncPrefectClient(api_url)


@dataclass
class Faults:
    """What one pass breaks while it runs.

    kills: SIGKILLs of running flow-run processes (the worker survives and
        reports the run Crashed);
    worker_kills: whole workers SIGKILLed with their flow run, as when a host
        dies; nothing reports the run, so the zombie automation marks it
        Crashed when its heartbeats stop, and a new worker takes the place;
    server_restart: the Prefect server stopped and started again on the same
        port and database while runs are in flight.
    Each fault lands on a run that holds its user's slot: one in the middle
    of a consolidation; when the polls catch none there (a consolidation
    shorter than a poll), on one RUNNING for fallback_s.
    A run that ends other than Completed is submitted again for its user."""

    kills: int = 0
    worker_kills: int = 0
    server_restart: bool = False
    fallback_s: float = 4.0

    def any(self) -> bool:
        return bool(self.kills or self.worker_kills or self.server_restart)


def _ppid(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("PPid:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _owner(st: Stack, pid: int) -> subprocess.Popen[bytes] | None:
    """The worker whose process tree holds `pid`."""
    mine = {w.pid: w for w in st.workers if w.poll() is None}
    while pid > 1:
        if pid in mine:
            return mine[pid]
        pid = _ppid(pid)
    return None


def _slot_held(c: Any, user: str) -> bool:
    """Whether the user's Prefect concurrency slot is taken: a run holds it
    from the start of the user's consolidation to its end (tasks/exclusion.py),
    and the server's own table says so at once (task run states come later,
    through events)."""
    from prefect.exceptions import ObjectNotFound

    try:
        limit = c.read_global_concurrency_limit_by_name(limit_name(user))
    except ObjectNotFound:  # made on first use
        return False
    return bool(limit.active_slots)


def _running_tasks(c: Any, flow_run_id: Any) -> list[str]:
    """The task runs of a flow run that Prefect had as RUNNING (as reported,
    so up to a state report behind): where a kill landed."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    runs = c.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return sorted(t.name for t in runs if t.state and t.state.type.value == "RUNNING")


class _Driver:
    """Submits one run per unit (a user, or a shard of users), watches them,
    injects the faults and resubmits what did not complete. Runs are keyed by
    their unit's label, which stands in for the user in the fault records."""

    def __init__(
        self,
        st: Stack,
        units: dict[str, dict[str, Any]],
        db_uri: str,
        faults: Faults,
        deadline_s: float,
    ) -> None:
        self.st, self.faults, self.deadline_s = st, faults, deadline_s
        self.env = {
            "EPISODIC_DB_URI": db_uri,
            "EPISODIC_EMBEDDER": "hash",
            "EPISODIC_LLM": "offline",
        }
        self.units = units  # label -> the flow run's parameters
        self.runs: dict[Any, str] = {}
        self.pending: set[Any] = set()
        self.running_since: dict[Any, float] = {}
        self.faulted: dict[Any, dict[str, Any]] = {}  # run -> its fault record
        self.events: list[dict[str, Any]] = []
        self.restart: dict[str, Any] | None = None
        self.dep_id: Any = None

    def submit(self, c: Any, unit: str) -> Any:
        rid = c.create_flow_run_from_deployment(
            self.dep_id,
            parameters={**self.units[unit], "flush": True},
            job_variables={"env": self.env},
        ).id
        self.runs[rid] = unit
        self.pending.add(rid)
        return rid

    def _count(self, kind: str) -> int:
        """Faults of `kind` that took: a kill whose run still completed (it
        had finished its work) does not count, and another is made."""
        return sum(1 for e in self.events if e["kind"] == kind and e.get("state") != "COMPLETED")

    def _victim(self, c: Any) -> tuple[Any, int, bool] | None:
        """A run in the middle of a consolidation (it holds its user's
        concurrency slot), or, when no poll caught it there (a short one),
        one RUNNING for fallback_s; of the user with the fewest faults so
        far, so that faults spread over users. A user whose last fault is
        recent is skipped: its rerun first waits out the killed run's slot
        lease. Also says whether the slot was held."""
        now = time.monotonic()
        hits: dict[str, int] = {}
        last: dict[str, float] = {}
        for e in self.events:
            hits[e["user"]] = hits.get(e["user"], 0) + 1
            last[e["user"]] = e["at"]
        ready = [
            rid
            for rid in self.running_since
            if rid in self.pending
            and rid not in self.faulted
            and now - last.get(self.runs[rid], -1e9) >= LEASE_S + 5.0
        ]
        for rid in sorted(ready, key=lambda r: hits.get(self.runs[r], 0)):
            held = _slot_held(c, self.runs[rid])
            if not held and now - self.running_since[rid] < self.faults.fallback_s:
                continue
            pid = c.read_flow_run(rid).infrastructure_pid
            if pid:
                return rid, int(str(pid).rsplit(":", 1)[-1]), held
        return None

    def _fault(self, c: Any) -> None:
        f = self.faults
        kind = None
        if self._count("worker") < f.worker_kills:
            kind = "worker"
        elif self._count("run") < f.kills:
            kind = "run"
        elif f.server_restart and self.restart is None:
            kind = "server"
        if kind is None:
            return
        victim = self._victim(c)
        if victim is None:
            return
        rid, pid, held = victim
        if kind == "server":
            self.restart = self.st.restart_server()
            self.restart["user"] = self.runs[rid]
            # a run made after the restart: the workers must find it
            self.restart["after_run"] = self.submit(c, self.runs[rid])
            return
        worker = _owner(self.st, pid) if kind == "worker" else None
        if kind == "worker" and worker is None:
            return
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return  # it ended first: not a kill
        if worker is not None:  # the host dies: the worker's session, at once
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
            self.st.workers.remove(worker)
            self.st.start_worker()
        rec = {
            "kind": kind,
            "run": rid,
            "user": self.runs[rid],
            "at": time.monotonic(),
            "mid_consolidation": held,  # it held its user's slot
            "during": _running_tasks(c, rid),
        }
        self.events.append(rec)
        self.faulted[rid] = rec

    def _ended(self, c: Any, rid: Any, state: str) -> None:
        self.pending.discard(rid)
        self.running_since.pop(rid, None)
        rec = self.faulted.get(rid)
        if rec is not None:
            rec["state"] = state
            rec["marked_s"] = round(time.monotonic() - rec["at"], 1)
        if state != "COMPLETED":
            again = self.submit(c, self.runs[rid])
            if rec is not None:
                rec["rerun"] = again
        for r in self.events:
            if r.get("rerun") == rid and state == "COMPLETED":
                r["recovered_s"] = round(time.monotonic() - r["at"], 1)
        if self.restart is not None and self.restart.get("after_run") == rid:
            self.restart["after_run_state"] = state

    def run(self) -> dict[str, Any]:
        started = time.monotonic()
        with _client(self.st.api_url) as c:
            self.dep_id = c.read_deployment_by_name(DEPLOYMENT).id
            for unit in self.units:
                self.submit(c, unit)
            while self.pending and time.monotonic() - started < self.deadline_s:
                time.sleep(0.3)
                for rid in list(self.pending):
                    try:
                        fr = c.read_flow_run(rid)
                    except Exception:  # the server restarting: ask again
                        continue
                    state = fr.state.type.value if fr.state else ""
                    if state == "RUNNING":
                        self.running_since.setdefault(rid, time.monotonic())
                    elif state in TERMINAL:
                        self._ended(c, rid, state)
                if self.faults.any():
                    self._fault(c)
            wall = time.monotonic() - started
            history = [c.read_flow_run(rid) for rid in self.runs]
        states = [fr.state.type.value for fr in history if fr.state]
        # a run this harness killed did no work after the kill, but its end_time is
        # when the server marked it CRASHED, which may fall after its rerun began:
        # it is left out (lost / duplicates / equals_reference check its work)
        spans = [
            (self.runs[fr.id], fr.start_time, None if _crashed(fr) else fr.end_time)
            for fr in history
        ]
        return {
            "seconds": round(wall, 2),
            "runs": len(self.runs),
            "unfinished": len(self.pending),  # still not ended at the deadline
            "states": dict(sorted(_count(states).items())),
            # why each run that did not complete ended as it did (then rerun)
            "not_completed": [
                {
                    "unit": self.runs[fr.id],
                    "state": fr.state.type.value,
                    "message": (fr.state.message or "")[:300],
                }
                for fr in history
                if fr.state and fr.state.type.value != "COMPLETED"
            ],
            "overlaps": overlaps(spans),
            "faults": [
                {k: str(v) if k in ("run", "rerun") else v for k, v in e.items() if k != "at"}
                for e in self.events
            ],
            "server_restart": None
            if self.restart is None
            else {k: str(v) if k == "after_run" else v for k, v in self.restart.items()},
        }


def run_users(
    st: Stack,
    users: list[str],
    db_uri: str,
    faults: Faults | None = None,
    deadline_s: float = 1800.0,
    shards: int = 0,
) -> dict[str, Any]:
    """One consolidate-user run per user (flush), or with `shards` one run
    per shard of the users (`--shard I/N`), through the workers, with
    `faults` injected; a run that does not complete is run again. Gives up
    after deadline_s and reports the runs still unfinished."""
    units: dict[str, dict[str, Any]] = (
        {f"shard-{i}/{shards}": {"shard": f"{i}/{shards}"} for i in range(shards)}
        if shards
        else {u: {"user": u} for u in users}
    )
    return _Driver(st, units, db_uri, faults or Faults(), deadline_s).run()


def _crashed(fr: Any) -> bool:
    return bool(fr.state and fr.state.type.value == "CRASHED")


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


def _pass(
    st: Stack,
    n: int,
    label: str,
    faults: Faults,
    rows: list[dict[str, Any]],
    base: Path,
    shards: int = 0,
) -> dict[str, Any]:
    """One pass with `n` workers over a fresh copy of the corpus."""
    while len([w for w in st.workers if w.poll() is None]) < n:
        st.start_worker()
    for w in st.workers[n:]:
        halt(w)
    st.workers = st.workers[:n]
    names = sorted({r["user_id"] for r in rows})
    db = str(base / f"lancedb-{n}-{label}")
    ingest_corpus(db, rows, base)
    res = run_users(st, names, db, faults, shards=shards)
    res["pass"] = label
    res["runs_per"] = f"shard of {shards}" if shards else "user"
    state = end_state(db, names)
    res.update(
        workers=n,
        turns_per_s=round(len(rows) / res["seconds"], 1),
        lost=state["lost"],
        duplicates=state["duplicates"],
        episodes=state["episodes"],
    )
    return res


def scale_out(
    workers: tuple[int, ...] = (1, 2),
    users: int = 24,
    streams: int = 2,
    turns: int = 60,
    faults: Faults | None = None,
    restart: bool = True,
    tmp: Path | None = None,
    clean: bool = True,
    sharded: bool = True,
    per_user: bool = True,
) -> dict[str, Any]:
    """The figures of `episodic bench scale-out --json`: a clean pass per
    worker count with one run per user and, with `sharded`, one with one run
    per shard (as many shards as the largest worker count, so each run pays
    its process start once); a pass at the largest count with `faults` (default: 10
    flow-run kills and 1 whole-worker kill) and, with `restart`, a pass
    during which the Prefect server restarts. Every pass is compared with
    the uninterrupted reference. `per_user=False` leaves out the clean
    passes with a run per user (a larger corpus, sharded passes only)."""
    faults = Faults(kills=10, worker_kills=1) if faults is None else faults
    base = Path(tempfile.mkdtemp(prefix="episodic-scale-", dir=tmp))
    rows = synthetic_corpus(users, streams, turns)
    names = sorted({r["user_id"] for r in rows})
    out: dict[str, Any] = {"users": users, "streams": users * streams, "turns": len(rows)}
    top = max(workers)
    cases = [(n, "clean", Faults(), 0) for n in workers if clean and per_user]
    cases += [(n, "clean", Faults(), top) for n in workers if clean and sharded]
    cases += [(top, "faults", faults, 0)] if faults.any() else []
    cases += [(top, "restart", Faults(server_restart=True), 0)] if restart else []
    passes = []
    try:
        with stack(base) as st:
            ref_db = str(base / "lancedb-reference")
            ingest_corpus(ref_db, rows, base)
            ref = reference_state(st.api_url, ref_db, names)
            out["reference"] = {"lost": ref["lost"], "duplicates": ref["duplicates"]}
            for n, label, f, shards in cases:
                res = _pass(st, n, f"{label}-sharded" if shards else label, f, rows, base, shards)
                res["equals_reference"] = res.pop("episodes") == ref["episodes"]
                passes.append(res)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    out["passes"] = passes
    for key in ("lost", "duplicates", "overlaps"):
        out[key] = sum(p[key] for p in passes)
    faults_made = [e for p in passes for e in p["faults"]]
    for kind, key in (("run", "kills"), ("worker", "worker_kills")):
        # a kill counts when its run ended Crashed; one that came after the
        # run's work was done (the run still completed) is "missed"
        made = [e for e in faults_made if e["kind"] == kind]
        out[key] = sum(1 for e in made if e.get("state") == "CRASHED")
        out[f"missed_{key}"] = sum(1 for e in made if e.get("state") == "COMPLETED")
    out["mid_consolidation"] = sum(
        1 for e in faults_made if e.get("state") == "CRASHED" and e["mid_consolidation"]
    )
    for key, label in (("speedup", "clean"), ("speedup_sharded", "clean-sharded")):
        speed = {p["workers"]: p["turns_per_s"] for p in passes if p["pass"] == label}
        if len(speed) > 1:
            lo, hi = min(speed), max(speed)
            out[key] = round(speed[hi] / speed[lo], 2) if speed[lo] else None
    return out


if __name__ == "__main__":
    ws = tuple(int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "1,2").split(","))
    print(json.dumps(scale_out(ws), indent=2, default=str))
