"""Shared helpers of the reliability suite (tests/integration/test_reliability_*.py).

- inputs: fact-rich synthetic streams and hostile user ids;
- state: what a run leaves in the store, reduced to comparable tuples, and the
  crash invariants (every turn at or below the watermark in exactly one
  closed episode or in the open buffer; no duplicate rows);
- a fork server: one process that has paid the imports once and forks a
  child per run (a consolidate or maintain flow run, or an `episodic`
  command line), so that a crash trial costs one run and not one
  interpreter start (each child is a real process that dies by
  `os._exit(137)` at a crash point, or by SIGKILL or SIGINT from its parent);
- figures: `record(section, **numbers)` appends to the JSON-lines file named
  by RELIABILITY_FIGURES (no-op when unset); `reliability_report.py` sums them.

Run as `python -m tests.integration.reliability_support serve` it is the fork
server itself (see `serve`).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIGURES_ENV = "RELIABILITY_FIGURES"

# ---- figures -----------------------------------------------------------------


def record(section: str, **numbers: Any) -> None:
    """Append one line of figures for the report; nothing when not collecting."""
    path = os.environ.get(FIGURES_ENV)
    if not path:
        return
    line = json.dumps({"section": section, **numbers}, default=str, sort_keys=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


# ---- inputs ------------------------------------------------------------------

STATEMENTS = [
    ("I live in Berlin and I work at Acme as a backend engineer.", "berlin acme"),
    ("My dog is named Rex.", "dog rex"),
    ("I use vim for everything.", "vim editor"),
    ("Actually I moved to Paris last month.", "paris move"),
    ("We switched to neovim.", "neovim switch"),
    ("I like rock climbing on weekends.", "climbing weekends"),
    ("I am planning to visit Japan in the spring.", "japan trip"),
    ("I stopped drinking coffee.", "coffee habit"),
]

HOSTILE_IDS = [
    "o'brien",
    'say "hi"',
    "100%",
    "a_b",
    "' OR '1'='1",
    "x'; DROP TABLE raw_turns; --",
    "o''brien",  # lancedb's SQL rendering took '' as an escaped quote: o'brien's rows
    "x\\') OR 1=1 --",  # ... and ended a literal at a quote after a backslash
    "ユーザー🙂ñ",
    "L" * 2000,  # longer than TurnIn allows: ingest must refuse it, reads find nothing
]


def fact_turns(
    user: str = "u1",
    stream: str = "s1",
    *,
    episodes: int = 8,
    turns_per: int = 6,
    start: datetime | None = None,
    marker: str = "",
    offset: int = 0,
) -> list[dict[str, Any]]:
    """Episodes of user/assistant turns, each opened by a first-person fact and
    separated by 45 minutes, so the detector cuts on time gaps and the offline
    extractor finds facts (some of which update earlier ones)."""
    t = start or datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
    out: list[dict[str, Any]] = []
    for e in range(episodes):
        fact, words = STATEMENTS[(e + offset) % len(STATEMENTS)]
        for i in range(turns_per):
            role = "user" if i % 2 == 0 else "assistant"
            if i == 0:
                text = fact
            elif role == "user":
                text = f"tell me more about {words}, part {i} {marker}".strip()
            else:
                text = f"here is more on {words} (step {i} of episode {e}) {marker}".strip()
            out.append(turn_row(user, stream, role, text, t))
            t += timedelta(minutes=1)
        t += timedelta(minutes=45)
    return out


def turn_row(user: str, stream: str, role: str, text: str, ts: datetime) -> dict[str, Any]:
    """One line of a jsonl input file."""
    return {"user_id": user, "stream_id": stream, "role": role, "text": text, "ts": ts.isoformat()}


def write_jsonl(path: Path, turns: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    return path


# u1's two streams (the second's words marked "second"), the input of the
# concurrency and crash trials, consolidated with SETTINGS
TWO_STREAMS = fact_turns("u1", "s1") + fact_turns("u1", "s2", offset=3, marker="second")
SETTINGS = {"batch_turns": 8}  # several persist steps per stream
USERS = ("u1", "u2")  # the users of the crash trials' input (u1's streams and one of u2's)


# ---- a memory on a home ---------------------------------------------------------


def runtime_env(home: Path, **overrides: Any) -> dict[str, str]:
    env = {"EPISODIC_HOME": str(home), "EPISODIC_EMBEDDER": "hash", "EPISODIC_LLM": "offline"}
    env.update({f"EPISODIC_{k.upper()}": str(v) for k, v in overrides.items()})
    return env


def run_in_root(
    argv: list[str], env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """A command in a fresh process from the repository root, output as text."""
    return subprocess.run(
        argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def use_home(monkeypatch: Any, home: Path, **overrides: Any) -> Any:
    """The memory (episodic.adapters.embedded.Memory) of `home`, closed when
    the test ends; pass it to the flows (`consolidate(memory=m)`). The
    environment names `home` too (monkeypatched, restored after the test), for
    the commands a test runs in this process or a child."""
    from episodic.adapters.embedded import Memory
    from episodic.config import Settings
    from tests.integration.helpers import MEMORIES

    for k, v in runtime_env(home, **overrides).items():
        monkeypatch.setenv(k, v)
    return MEMORIES.enter_context(Memory(Settings()))


def open_repos(home: Path) -> Any:
    """Repositories on `home`'s store, without touching the environment."""
    from storage.db import Store
    from storage.episodes import Episodes
    from storage.facts import Facts
    from storage.raw import RawLog
    from storage.reflections import Reflections
    from storage.state import Checkpoints

    store = Store(str(home / "lancedb"), dim=384)

    @dataclass
    class Repos:
        store: Any
        raw: Any
        episodes: Any
        facts: Any
        checkpoints: Any
        reflections: Any

    return Repos(
        store, RawLog(store), Episodes(store), Facts(store), Checkpoints(store), Reflections(store)
    )


# ---- state and invariants ------------------------------------------------------


def final_state(repos: Any, user: str) -> dict[str, Any]:
    """What must be equal between an interrupted and an uninterrupted run."""
    eps = repos.episodes.list(user)
    facts = repos.facts.list(user, include_inactive=True)
    hist = repos.facts.all_history(user)
    return {
        "episodes": sorted(
            (e.stream_id, e.first_seq, e.last_seq, e.boundary_reason, e.salience) for e in eps
        ),
        "facts": sorted((f.text, f.status) for f in facts),
        "history": sorted((h.event, h.old_text or "", h.new_text or "") for h in hist),
        "facts_state": sorted(e.facts_state for e in eps),
    }


def _dupes(keys: list[Any]) -> int:
    return sum(n - 1 for n in Counter(keys).values() if n > 1)


def table_ids(repos: Any, name: str, key: str) -> list[str]:
    tbl = repos.store.table(name)
    if tbl.count_rows() == 0:
        return []
    return [str(x) for x in tbl.to_arrow().column(key).to_pylist()]


@dataclass
class Check:
    turns: int = 0
    covered: int = 0  # turns at or below a watermark
    lost: int = 0  # at or below the watermark, in no episode and not open
    doubled: int = 0  # in two episodes, or in an episode and the open buffer
    ahead: int = 0  # episodes written before a checkpoint that a crash never wrote
    duplicate_rows: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.doubled or self.duplicate_rows or self.problems)


def check_invariants(repos: Any, user: str) -> Check:
    """The crash invariants for one user's store, at any moment between runs.

    Episodes are written before the checkpoint that records them (its
    `last_closed_seq`); a crash in between leaves episodes "ahead" of the
    checkpoint, whose turns the checkpoint still holds open. They are counted,
    not treated as duplicates: the rerun derives them again under the same
    ids (the final-state comparison checks that it does)."""
    out = Check()
    turns = {}
    for h in repos.raw.streams(user):
        for t in repos.raw.read(user, h.stream_id, -1, h.head_seq):
            turns[t.turn_id] = t
    out.turns = len(turns)
    marks = {c.stream_id: c for c in repos.checkpoints.all(user)}
    confirmed: Counter[str] = Counter()
    anywhere: Counter[str] = Counter()
    for e in repos.episodes.list(user):
        if not e.turn_ids or e.n_turns != len(e.turn_ids):
            out.problems.append(f"half-written episode {e.episode_id}")
        anywhere.update(e.turn_ids)
        cp = marks.get(e.stream_id)
        if cp is not None and e.last_seq <= cp.last_closed_seq:
            confirmed.update(e.turn_ids)
        else:
            out.ahead += 1
        seqs = sorted(turns[t].seq for t in e.turn_ids if t in turns)
        if seqs != list(range(e.first_seq, e.last_seq + 1)):
            out.problems.append(f"episode {e.episode_id} turns do not match its seq range")
    for tid, t in turns.items():
        if anywhere[tid] > 1:
            out.doubled += 1
            continue
        cp = marks.get(t.stream_id)
        if cp is None or t.seq > cp.watermark:
            continue
        out.covered += 1
        n = confirmed[tid] + (1 if tid in set(cp.open_turn_ids) else 0)
        if n == 0:
            out.lost += 1
        elif n > 1:
            out.doubled += 1
    for name, key in (
        ("episodes", "episode_id"),
        ("facts", "fact_id"),
        ("fact_history", "history_id"),
        ("raw_turns", "turn_id"),
        ("segmenter_state", "key"),
        ("reflections", "reflection_id"),
    ):
        out.duplicate_rows += _dupes(table_ids(repos, name, key))
    # the same episode twice under two ids would hide behind distinct keys
    eps = repos.episodes.list(user)
    out.duplicate_rows += _dupes([(e.stream_id, e.first_seq) for e in eps])
    hist = repos.facts.all_history(user)
    out.duplicate_rows += _dupes([(h.episode_id, h.event, h.fact_id, h.new_text) for h in hist])
    return out


# ---- table scans for tenant isolation ------------------------------------------

TABLE_KEYS = {
    "raw_turns": "turn_id",
    "streams": "key",
    "turn_vectors": "key",
    "rejected_input": "reject_id",
    "episodes": "episode_id",
    "facts": "fact_id",
    "fact_history": "history_id",
    "reflections": "reflection_id",
    "segmenter_state": "key",
    "reflection_marks": "user_id",
}


def rows_of_others(store: Any, user: str) -> dict[str, list[str]]:
    """Every row not of `user`, per table, as canonical JSON sorted by key: two
    snapshots are equal only if no byte of another user's rows changed."""
    out: dict[str, list[str]] = {}
    for name in TABLE_KEYS:
        tbl = store.table(name)
        rows = tbl.to_arrow().to_pylist() if tbl.count_rows() else []
        kept = [r for r in rows if r.get("user_id") != user]
        out[name] = sorted(json.dumps(r, default=repr, sort_keys=True) for r in kept)
    return out


# ---- the fork server -------------------------------------------------------------


@dataclass
class ChildResult:
    status: int  # exit code, or -signal number
    seconds: float
    killed: bool
    summary: dict[str, Any] | None
    log: str

    @property
    def crashed(self) -> bool:
        return self.status != 0


class ForkServer:
    """A long-lived process that forks one child per consolidation run."""

    def __init__(self, api_url: str, workdir: Path, env: dict[str, str] | None = None) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        full = dict(os.environ)
        full.update(env or {})
        full.update(
            {
                "PREFECT_API_URL": api_url,
                "PREFECT_LOGGING_LEVEL": "WARNING",
                "EPISODIC_EMBEDDER": "hash",
                "EPISODIC_LLM": "offline",
                "PYTHONWARNINGS": "ignore",
            }
        )
        full.pop("EPISODIC_CRASHPOINT", None)
        self._n = 0
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.reliability_support", "serve"],
            cwd=ROOT,
            env=full,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(workdir / "server.log", "w"),  # noqa: SIM115
            text=True,
            bufsize=1,
        )
        line = self._readline(timeout=600)
        if line.strip() != "ready":
            raise RuntimeError(f"fork server did not start: {line!r}")

    def _readline(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            raise TimeoutError("fork server did not answer")
        return self.proc.stdout.readline()

    def run(self, *jobs: dict[str, Any], timeout: float = 600) -> list[ChildResult]:
        """Run the jobs at once, one child each. A job: home; job: "consolidate"
        (default), "maintain", "ingest" (path, batch) or "cli" (args, its stdout
        the summary); user, flush, crash ("name:nth[:mode]"), kill_after
        (seconds), kill_signal ("SIGKILL" or "SIGINT"), env (extra variables)."""
        assert self.proc.stdin is not None
        reqs = []
        for job in jobs:
            self._n += 1
            tag = self.workdir / f"child-{self._n}"
            reqs.append(
                {**job, "home": str(job["home"]), "result": f"{tag}.json", "log": f"{tag}.log"}
            )
        self.proc.stdin.write(json.dumps(reqs) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self._readline(timeout))
        out = []
        for req, res in zip(reqs, answer, strict=True):
            summary = None
            if Path(req["result"]).exists():
                try:
                    summary = json.loads(Path(req["result"]).read_text())
                except json.JSONDecodeError:  # a command killed mid-output
                    summary = None
            log = Path(req["log"]).read_text(errors="replace") if Path(req["log"]).exists() else ""
            out.append(ChildResult(res["status"], res["seconds"], res["killed"], summary, log))
        return out

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _child(req: dict[str, Any]) -> None:
    """In the forked child: run the job and leave; never returns."""
    code = 1
    try:
        fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.environ.update(runtime_env(Path(req["home"]), **req.get("settings", {})))
        os.environ.update(req.get("env", {}))
        if req.get("crash"):
            os.environ["EPISODIC_CRASHPOINT"] = req["crash"]
        job = req.get("job", "consolidate")
        if job == "cli":
            code = _cli_child(req)
        else:
            summary = _flow_child(job, req)
            Path(req["result"]).write_text(json.dumps(summary, default=str))
            code = 0
    except BaseException:  # the child reports everything, then exits
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _flow_child(job: str, req: dict[str, Any]) -> Any:
    from episodic.adapters.embedded import Memory

    with Memory() as memory:  # the home the environment names
        if job == "ingest":  # what `episodic ingest` runs, with a chosen batch size
            from episodic.service.ingest import ingest_file

            rt = memory.rt
            report = ingest_file(rt.raw, Path(req["path"]), "jsonl", batch=int(req["batch"]))
            rt.store.ensure_indexes()
            return report.as_dict()
        if job == "maintain":
            from flows.maintain import maintain

            now = datetime.fromisoformat(req["now"]) if req.get("now") else None
            params = req.get("params", {})
            return maintain(user=req.get("user"), now=now, memory=memory, **params)
        from flows.consolidate import consolidate

        flush = bool(req.get("flush", True))
        return consolidate(user=req.get("user"), flush=flush, memory=memory)


def _cli_child(req: dict[str, Any]) -> int:
    """`episodic <args>` as the entry point runs it; stdout to the result file.
    SIGINT arrives as it does from a terminal's Ctrl-C."""
    fd = os.open(req["result"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from episodic.adapters.cli.main import app

    try:
        app(args=req["args"], prog_name="episodic")
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


def _wait(children: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    done: dict[int, dict[str, Any]] = {}
    while len(done) < len(children):
        for pid, c in children.items():
            if pid in done:
                continue
            got, status = os.waitpid(pid, os.WNOHANG)
            elapsed = time.monotonic() - c["t0"]
            if got == 0:
                if c["kill_after"] is not None and elapsed >= c["kill_after"] and not c["killed"]:
                    os.kill(pid, c["signal"])  # our own child, not yet reaped
                    c["killed"] = True
                continue
            code = os.waitstatus_to_exitcode(status)
            # a child can finish between the poll above and the kill: the signal
            # then reaches a zombie and the exit is clean; that is no kill
            killed = c["killed"] and code != 0
            done[pid] = {"status": code, "seconds": round(elapsed, 3), "killed": killed}
        time.sleep(0.005)
    return done


def serve() -> None:
    """Read a JSON list of jobs per line; fork a child for each; answer with
    their exit statuses, in order. The imports are paid once, here."""
    import episodic.adapters.cli.main  # noqa: F401
    import flows.consolidate  # noqa: F401
    import flows.maintain  # noqa: F401
    import tasks.steps  # noqa: F401

    print("ready", flush=True)
    for line in sys.stdin:
        reqs = json.loads(line)
        children: dict[int, dict[str, Any]] = {}
        order = []
        for req in reqs:
            pid = os.fork()
            if pid == 0:
                _child(req)
            children[pid] = {
                "t0": time.monotonic(),
                "kill_after": req.get("kill_after"),
                "signal": getattr(signal, req.get("kill_signal", "SIGKILL")),
                "killed": False,
            }
            order.append(pid)
        done = _wait(children)
        print(json.dumps([done[p] for p in order]), flush=True)


def forkserver_for(tmp_path_factory: Any, name: str) -> Iterator[ForkServer]:
    """A fork server whose children talk to this session's Prefect API (the
    test harness's), working in a fresh temporary directory; closed after."""
    import prefect.settings

    url = str(prefect.settings.PREFECT_API_URL.value())
    server = ForkServer(url, tmp_path_factory.mktemp(name))
    try:
        yield server
    finally:
        server.close()


if __name__ == "__main__" and sys.argv[1:] == ["serve"]:
    serve()
