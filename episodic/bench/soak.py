"""The stateful soak (issue 32): hypothesis's `RuleBasedStateMachine` drives
one store the way the doors do, with hostile and repeated input, and checks
the store against a model of what was acknowledged after every step.

Rules: turns written for two tenants (good ones, retries with the same id,
an id reused for other text, a timestamp past year 9999, a record that is
not an object, a missing role); files ingested; consolidation in this
process, or in a child process killed at a random persistence point (exit
137, like `kill -9`, through EPISODIC_CRASHPOINT) and then consolidated
again; export and import, honest and with another tenant's ids; forgetting
a fact or a whole tenant.

Invariants after every step, per tenant: `doctor` finds nothing; raw holds
exactly the acknowledged turns, each once, with the text first acknowledged
(so no step changed another tenant's rows); every episode's turns and every
fact's source episodes exist (nothing derived outlives its source).

`episodic soak --minutes N --json` runs machines until the time is up and
reports steps, kills, turns checked and invariant violations; `make test`
runs a short one (tests/property/test_soak.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

TENANTS = ("ana", "ben")
CRASH_POINTS = (
    "after_episodes",
    "after_checkpoint",
    "before_salience_write",
    "after_fact_plan",
    "after_fact_apply",
    "before_episodes",
    "embed",
)


@dataclass
class Tally:
    steps: int = 0
    kill_attempts: int = 0  # consolidations started in a child that must die
    kills: int = 0  # ... that died at their crash point (exit 137)
    turns_checked: int = 0
    violations: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {
            "violations": len(self.violations),
            "first_violations": self.violations[:10],
        }


def machine(home_factory: Callable[[], Path], tally: Tally, *, kills: bool = True) -> type[Any]:
    """The state machine class over a fresh store per run (`home_factory`)."""
    from hypothesis import strategies as st
    from hypothesis.stateful import (
        RuleBasedStateMachine,
        initialize,
        invariant,
        precondition,
        rule,
    )

    from episodic.adapters.embedded import Memory
    from episodic.config import Settings
    from storage.frames import frame
    from storage.transfer import TransferError

    class Soak(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.home = home_factory()
            self.settings = Settings(home=self.home, embedder="hash", llm="offline")
            self.memory = Memory(self.settings)
            self.acked: dict[str, dict[str, str]] = {u: {} for u in TENANTS}  # user -> id -> text
            self.n = 0

        @initialize()
        def both_tenants_write(self) -> None:
            """Every run starts with both tenants' turns in the store."""
            for user in TENANTS:
                self.add(user, 3, [])

        def teardown(self) -> None:
            self.memory.close()

        def _record(self, user: str, items: list[Any], receipt: Any) -> None:
            refused = {r.index for r in receipt.rejected}
            ids = iter(receipt.turn_ids)
            for i, item in enumerate(items):
                if i in refused:
                    continue
                tid = next(ids)
                self.acked[user].setdefault(tid, str(item["text"]))

        @rule(
            user=st.sampled_from(TENANTS),
            n=st.integers(1, 6),
            hostile=st.lists(st.sampled_from(["retry", "conflict", "huge_ts", "list", "norole"])),
        )
        def add(self, user: str, n: int, hostile: list[str]) -> None:
            items: list[Any] = self._notes(user, n)
            for h in hostile:
                if h == "retry" and items:
                    items.append(dict(items[0]))
                elif h == "conflict" and items:
                    items.append({**items[0], "text": "something else entirely"})
                elif h == "huge_ts":
                    items.append({"role": "user", "text": "x", "ts": int("9" * 400)})
                elif h == "list":
                    items.append([1, 2])
                else:
                    items.append({"text": "no role"})
            receipt = self.memory.add(user, items)
            good = [
                it for i, it in enumerate(items) if i not in {r.index for r in receipt.rejected}
            ]
            assert all(isinstance(it, dict) for it in good)
            self._record(user, items, receipt)
            tally.steps += 1

        def _notes(self, user: str, n: int) -> list[Any]:
            """`n` new turns of `user`, each with its own client id."""
            items: list[Any] = []
            for _ in range(n):
                self.n += 1
                items.append(
                    {
                        "role": "user" if self.n % 2 else "assistant",
                        # first person: the offline extractor makes facts of them
                        "text": f"{user} note {self.n}: I moved to city {self.n % 5} "
                        f"for project {self.n % 7}",
                        "ts": 1_700_000_000 + 60 * self.n,
                        "id": f"{user}-{self.n}",
                    }
                )
            return items

        @rule(user=st.sampled_from(TENANTS), n=st.integers(1, 5))
        def ingest_file(self, user: str, n: int) -> None:
            path = self.home / f"in-{self.n}.jsonl"
            lines = []
            for _ in range(n):
                self.n += 1
                lines.append(
                    {
                        "role": "user",
                        "text": f"{user} file line {self.n}",
                        "ts": 1_700_000_000 + 60 * self.n,
                        "id": f"{user}-f{self.n}",
                        "stream_id": "files",
                    }  # fmt: skip
                )
            path.write_text(
                "".join(json.dumps(x) + "\n" for x in lines) + "not json\n", encoding="utf-8"
            )
            report = self.memory.ingest(path, "jsonl", user_id=user)
            assert report.rejected == 1
            for x in lines:
                receipt = self.memory.add(user, [{**x}])  # the same id: a duplicate now
                assert receipt.duplicates == 1, receipt
                self._record(user, [x], receipt)
            tally.steps += 1

        @rule(user=st.sampled_from(TENANTS))
        def consolidate(self, user: str) -> None:
            self.memory.consolidate(user, flush=True)
            tally.steps += 1

        @precondition(lambda self: kills)
        @rule(user=st.sampled_from(TENANTS), point=st.sampled_from(CRASH_POINTS))
        def consolidate_killed(self, user: str, point: str) -> None:
            """A consolidation in a child process that dies at `point` (exit
            137, as under kill -9), then one here that must recover."""
            from prefect.settings import PREFECT_API_URL

            # new turns, so the child has episodes to write and reaches its point
            notes = self._notes(user, 4)
            self._record(user, notes, self.memory.add(user, notes))
            api = PREFECT_API_URL.value()  # the child joins this process's Prefect server
            env = {
                **os.environ,
                **({"PREFECT_API_URL": str(api)} if api else {}),
                "EPISODIC_HOME": str(self.home),
                "EPISODIC_EMBEDDER": "hash",
                "EPISODIC_LLM": "offline",
                "EPISODIC_CRASHPOINT": f"{point}:1",
            }
            code = [sys.executable, "-m", "episodic.adapters.cli.main", "consolidate",
                    "--user", user, "--flush", "--json"]  # fmt: skip
            tally.kill_attempts += 1
            out = subprocess.run(code, env=env, capture_output=True, timeout=900)
            tally.kills += int(out.returncode == 137)
            self.memory.consolidate(user, flush=True)
            tally.steps += 1

        @rule(user=st.sampled_from(TENANTS), tamper=st.booleans())
        def export_import(self, user: str, tamper: bool) -> None:
            import pyarrow as pa
            import pyarrow.parquet as pq

            out = Path(tempfile.mkdtemp(dir=self.home, prefix="export-"))
            self.memory.export(user, out)
            other = TENANTS[1 - TENANTS.index(user)]
            theirs = frame(self.memory.rt.store, "raw_turns", other, ["turn_id"])
            if tamper and theirs.num_rows and (out / "raw_turns.parquet").exists():
                tbl = pq.read_table(out / "raw_turns.parquet")
                if tbl.num_rows:
                    ids = tbl["turn_id"].to_pylist()
                    ids[0] = theirs["turn_id"][0].as_py()
                    i = tbl.column_names.index("turn_id")
                    tbl = tbl.set_column(i, "turn_id", pa.array(ids))
                    pq.write_table(tbl, out / "raw_turns.parquet")
                    try:
                        self.memory.import_(out)
                    except TransferError:
                        tally.steps += 1
                        return
                    tally.violations.append(f"a tampered export of {user} was imported")
                    return
            self.memory.import_(out)  # honest: the store holds exactly this already
            tally.steps += 1

        @rule(user=st.sampled_from(TENANTS), everything=st.booleans())
        def forget(self, user: str, everything: bool) -> None:
            if everything:
                self.memory.forget(user, actor="soak")
                self.acked[user] = {}
            else:
                facts = self.memory.facts(user, include_inactive=True)
                if facts:
                    self.memory.forget(user, fact=facts[0].fact_id, actor="soak")
            tally.steps += 1

        @invariant()
        def store_matches_what_was_acknowledged(self) -> None:
            for user in TENANTS:
                self._check(user)

        def _check(self, user: str) -> None:
            store = self.memory.rt.store
            raw = frame(store, "raw_turns", user, ["turn_id", "text"])
            ids = raw["turn_id"].to_pylist()
            texts = dict(zip(ids, raw["text"].to_pylist(), strict=True))
            tally.turns_checked += len(ids)
            problems = []
            if len(ids) != len(set(ids)):
                problems.append(f"{user}: a turn stored twice")
            if set(ids) != set(self.acked[user]):
                missing = len(set(self.acked[user]) - set(ids))
                extra = len(set(ids) - set(self.acked[user]))
                problems.append(f"{user}: {missing} acknowledged turns missing, {extra} extra")
            changed = [t for t, x in self.acked[user].items() if texts.get(t, x) != x]
            if changed:
                problems.append(f"{user}: {len(changed)} turns changed text")
            report = self.memory.doctor(user)
            if not report.ok:
                problems.append(f"{user}: doctor: {[p.kind for p in report.problems]}")
            episodes = frame(store, "episodes", user, ["episode_id", "turn_ids"])
            held = {t for ts in episodes["turn_ids"].to_pylist() for t in ts}
            if held - set(ids):
                problems.append(f"{user}: episodes hold turns raw does not")
            facts = frame(store, "facts", user, ["source_episode_ids"])
            sources = {e for es in facts["source_episode_ids"].to_pylist() for e in es}
            if sources - set(episodes["episode_id"].to_pylist()):
                problems.append(f"{user}: facts cite episodes that are gone")
            tally.violations.extend(problems)
            assert not problems, problems

    return Soak


def run_soak(minutes: float, *, seed: int = 0, steps: int = 25) -> dict[str, Any]:
    """Machines of `steps` steps each until `minutes` have passed; the tally."""
    from hypothesis import HealthCheck, settings
    from hypothesis.stateful import run_state_machine_as_test

    tally = Tally()
    root = Path(tempfile.mkdtemp(prefix="episodic-soak-"))
    made = [0]

    def home() -> Path:
        made[0] += 1
        return root / f"run-{made[0]}"

    cls = machine(home, tally)
    deadline = time.monotonic() + 60 * minutes
    runs = 0
    while time.monotonic() < deadline:
        runs += 1
        config = settings(
            # Hypothesis tries the simplest sequence first (every step the first
            # rule); one example a run would replay just that one, every run
            max_examples=8,
            stateful_step_count=steps,
            deadline=None,
            database=None,
            derandomize=False,
            suppress_health_check=list(HealthCheck),
        )
        try:
            run_state_machine_as_test(cls, settings=config)
        except AssertionError:
            pass  # counted in the tally's violations
    return {**tally.as_dict(), "runs": runs, "minutes": minutes, "seed": seed}
