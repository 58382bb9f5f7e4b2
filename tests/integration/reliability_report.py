"""Run the reliability suite and write its figures: the numbers in the README's
Reliability section come from here, never by hand.

    .venv/bin/python tests/integration/reliability_report.py \
        [--out docs/reliability.json] [--markdown docs/reliability.md] \
        [--growth-polls 10000] [--upkeep-every 1000]

The tests append one JSON line per trial to the file named by
RELIABILITY_FIGURES (see reliability_support.record); this script runs them
with that variable set, sums the lines and writes the totals as JSON and, if
asked, as the Markdown section.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TESTS = [
    "tests/integration/test_reliability_crash.py",
    "tests/integration/test_reliability_ingest_crash.py",
    "tests/integration/test_reliability_concurrency.py",
    "tests/property/test_hostile_cli.py",
    "tests/integration/test_reliability_tenants.py",
    "tests/integration/test_reliability_llm_faults.py",
    "tests/integration/test_reliability_growth.py",
]


def _sum(rows: list[dict[str, Any]], key: str) -> int:
    return sum(int(r.get(key, 0) or 0) for r in rows)


def _writer_trials(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Ingest or maintain crash trials: the ones whose kill landed, and totals."""
    hit = [r for r in rows if not r["kind"].endswith("-missed")]
    return {
        "trials": len(hit),
        "kills_that_missed": len(rows) - len(hit),
        "by_kind": dict(Counter(r["kind"].split(":")[0] for r in hit)),
        "stale_heads_left_by_the_crash": _sum(hit, "stale_heads_after_crash"),
        "turns_lost": _sum(rows, "turns_lost"),
        "duplicate_rows": _sum(rows, "duplicate_rows"),
        "duplicate_seqs": _sum(rows, "duplicate_seqs"),
        "turns_not_in_exactly_one_episode": _sum(rows, "not_in_one_episode"),
        "doctor_ok": _sum(rows, "doctor_ok"),
    }


def summarise(lines: list[dict[str, Any]]) -> dict[str, Any]:
    by: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        by.setdefault(line["section"], []).append(line)
    crash = [r for r in by.get("crash", []) if r["kind"] != "sigkill-missed"]
    conc = by.get("concurrency", [])
    growth = by.get("growth", [])
    llm = by.get("llm_faults", [])
    writers = by.get("ingest_crash", []) + by.get("maintain_crash", [])
    kinds = Counter(r["kind"].split(":")[0] for r in crash)
    fault_kinds: Counter[str] = Counter()
    for r in llm:
        fault_kinds.update(r.get("fault_kinds", {}))
    return {
        "crash": {
            "trials": len(crash),
            "at_crash_points": kinds["point"] + kinds["double"] + kinds["cli"],
            "sigkill_at_random_time": kinds["sigkill"],
            "random_kills_that_missed": len(by.get("crash", [])) - len(crash),
            "where_kills_landed": dict(Counter(r["progress"] for r in crash)),
            "turns_lost": _sum(crash, "turns_lost"),
            "turns_doubled": _sum(crash, "doubled"),
            "duplicate_rows": _sum(crash, "duplicate_rows"),
            "episodes_ahead_of_checkpoint_after_crash": _sum(crash, "ahead_after_crash"),
            "final_state_mismatches": _sum(crash, "state_mismatches"),
        },
        "ingest_crash": _writer_trials(by.get("ingest_crash", [])),
        "maintain_crash": _writer_trials(by.get("maintain_crash", [])),
        "concurrency": {
            "trials": len(conc),
            "turns_lost": _sum(conc, "turns_lost"),
            "duplicate_rows": _sum(conc, "duplicate_rows"),
            "searches_during_consolidation": _sum(conc, "searches"),
            "half_written_episodes_seen": _sum(conc, "half_written"),
        },
        "hostile_input": {
            "files": _sum(by.get("hostile", []), "files"),
            "inputs_tried": _sum(by.get("hostile", []), "inputs_tried"),
            "crashes": _sum(by.get("hostile", []), "crashes"),
        },
        "tenants": {
            "users": _sum(by.get("tenants", []), "users"),
            "commands": _sum(by.get("tenants", []), "commands"),
            "cross_tenant_reads": _sum(by.get("tenants", []), "cross_tenant_reads"),
            "cross_tenant_writes": _sum(by.get("tenants", []), "cross_tenant_writes"),
        },
        "llm_faults": {
            "episodes": _sum(llm, "episodes"),
            "requests": _sum(llm, "requests"),
            "faults_injected": _sum(llm, "faults_injected"),
            "fault_kinds": dict(fault_kinds),
            "scored_by_model": _sum(llm, "scored_by_model"),
            "scored_by_fallback": _sum(llm, "scored_by_fallback"),
            "episodes_unscored": _sum(llm, "episodes_unscored"),
            "flow_runs": _sum(llm, "flow_runs"),
            "flow_runs_failed": _sum(llm, "flow_runs_failed"),
            "tokens_served": _sum(llm, "tokens_served"),
            "tokens_counted": _sum(llm, "tokens_counted"),
        },
        "growth": growth[-1] if growth else {},
        "totals": {
            "turns_lost": _sum(crash, "turns_lost")
            + _sum(conc, "turns_lost")
            + _sum(growth, "turns_lost")
            + _sum(writers, "turns_lost"),
            "duplicate_rows": _sum(crash, "duplicate_rows")
            + _sum(conc, "duplicate_rows")
            + _sum(growth, "duplicate_rows")
            + _sum(writers, "duplicate_rows"),
        },
    }


def markdown(fig: dict[str, Any]) -> str:
    c, k, h, t, m, g = (
        fig[s] for s in ("crash", "concurrency", "hostile_input", "tenants", "llm_faults", "growth")
    )
    run = fig["run"]
    ing = fig.get("ingest_crash", {})
    mnt = fig.get("maintain_crash", {})
    ing_runs = ing.get("trials", 0) + ing.get("kills_that_missed", 0)
    lines = [
        "## Reliability",
        "",
        f"Figures from the last run of the reliability suite ({run['date']}, "
        f"{run['seconds']:.0f} s, pytest exit {run['pytest_exit']}), written by "
        "`tests/integration/reliability_report.py`; the tests that produce them are "
        "`tests/integration/test_reliability_*.py` and `tests/property/test_hostile_cli.py`.",
        "",
        "| what | figure |",
        "|---|---|",
        f"| crash trials (consolidate killed, then rerun) | {c['trials']} "
        f"({c['at_crash_points']} at named crash points, {c['sigkill_at_random_time']} SIGKILL "
        "at a random time) |",
        f"| ingest crash trials (killed, re-ingested, more ingested, consolidated) | "
        f"{ing.get('trials', 0)} ("
        + ", ".join(f"{n} {k}" for k, n in sorted(ing.get("by_kind", {}).items()))
        + f"); {ing.get('stale_heads_left_by_the_crash', 0)} stream heads left stale by "
        "a kill |",
        f"| ingest trials: duplicate seqs / turns not in exactly one episode / doctor ok | "
        f"**{ing.get('duplicate_seqs', 0)}** / **{ing.get('turns_not_in_exactly_one_episode', 0)}"
        f"** / {ing.get('doctor_ok', 0)} of {ing_runs} |",
        f"| maintain crash trials (killed, rerun, then ingest and consolidate) | "
        f"{mnt.get('trials', 0)}, turns lost **{mnt.get('turns_lost', 0)}**, doctor ok "
        f"{mnt.get('doctor_ok', 0)} |",
        f"| turns lost | **{fig['totals']['turns_lost']}** |",
        f"| duplicate rows (episodes, facts, history, raw, checkpoints) | "
        f"**{fig['totals']['duplicate_rows']}** |",
        f"| end state differing from an uninterrupted run | {c['final_state_mismatches']} |",
        f"| concurrency trials (two consolidations; ingest and searches during one) | "
        f"{k['trials']}, {k['searches_during_consolidation']} searches, "
        f"{k['half_written_episodes_seen']} half-written episodes seen |",
        f"| hostile inputs tried through `episodic ingest` | {h['inputs_tried']} in {h['files']} "
        "files |",
        f"| crashes (tracebacks) on hostile input | **{h['crashes']}** |",
        f"| cross-tenant reads | **{t['cross_tenant_reads']}** ({t['users']} users with "
        f"hostile ids, {t['commands']} commands and flow runs) |",
        f"| cross-tenant writes | **{t['cross_tenant_writes']}** |",
        f"| LLM faults injected | {m['faults_injected']} over {m['episodes']} episodes "
        f"({', '.join(f'{n} {kind}' for kind, n in sorted(m['fault_kinds'].items()))}) |",
        f"| episodes unscored | **{m['episodes_unscored']}** ({m['scored_by_model']} scored by the "
        f"model, {m['scored_by_fallback']} by the recorded offline fallback) |",
        f"| flow runs failed under LLM faults | {m['flow_runs_failed']} of {m['flow_runs']} |",
        f"| tokens served by the stub / counted by the provider | {m['tokens_served']} / "
        f"{m['tokens_counted']} |",
    ]
    if g:
        lines += [
            f"| storage growth: polls of one turn | {g['polls']} "
            f"({g['seconds_per_poll'] * 1000:.0f} ms a poll, upkeep {g['upkeeps_between']} "
            "times between) |",
            f"| raw_turns versions / fragments before upkeep | {g['raw_versions_before']} / "
            f"{g['raw_fragments_before']} |",
            f"| most versions / fragments of any table after upkeep | "
            f"{g['max_versions_after']} / {g['max_fragments_after']} |",
            f"| poll reads: grown / after upkeep / fresh table | {g['probe_ms_grown']} / "
            f"{g['probe_ms_maintained']} / {g['probe_ms_fresh']} ms "
            f"(ratio {g['latency_ratio']}) |",
        ]
    lines += [
        "",
        "What the tests do:",
        "",
        "- **Crash safety**: the consolidate flow runs in a child process that dies "
        "(`os._exit(137)`) at a named point (embedding, before and after the episode write, "
        "after the checkpoint, before the salience write, after the fact plan, after the fact "
        "apply) or is SIGKILLed at a random moment; the invariants are checked on what it left "
        "(every turn at or below the watermark in exactly one closed episode or in the open "
        "buffer; no duplicate rows), the flow is rerun, and the end state (episodes, salience, "
        "facts, history) must equal an uninterrupted run's. The watermark lives in the "
        "checkpoint row, written atomically with the open buffer and detector state.",
        "- **Ingest crashes**: `episodic ingest` (or what it runs, in appends of 100 turns) "
        "dies at a named point of an append (before the raw commit, after it with the stream "
        "heads not yet written, after the heads; first, middle and last batch), twice in a "
        "row, by SIGKILL or SIGINT at a random moment, or on a full disk (ENOSPC injected, "
        "and a real tmpfs that fills: exit 4 with one line); then the file is ingested again, "
        "new turns after it, the consolidate flow runs and `episodic doctor --json` must say "
        "ok: every input turn stored once, seqs unique and contiguous, every turn in exactly "
        "one episode. The same for `maintain` killed between its writes.",
        "- **Concurrency**: two consolidations of one user at once end as one run did; an "
        "ingest during a consolidation loses nothing; searches during one never see a "
        "half-written episode.",
        "- **Hostile input** (hypothesis, through `episodic ingest --json` and LanceDB): "
        "truncated and malformed JSON, wrong types, missing fields, multi-MB lines, control "
        "characters, invalid UTF-8, deep nesting, timestamps out of range or in the future, "
        "mutated transcripts of every format. Exit 0/1 with a message, each refusal a "
        "`rejected_input` row, every good line stored.",
        "- **Tenant isolation**: user ids with quotes, `%`, `_`, SQL injection, unicode and "
        "2,000 characters; every command and flow run as each user; full table scans before "
        "and after must show every other user's rows byte-identical, and no output may name "
        "another user's rows.",
        "- **LLM faults**: a stub Anthropic server answers with a seeded mix of timeouts, 429, "
        "5xx, malformed JSON, schema-invalid answers and non-JSON bodies; every episode ends "
        "scored and the provider's token count equals the stub's.",
        "- **Storage growth**: polls of one turn each through `RawLog.append` and "
        "`poll_stream` (the storage calls of a flow run, without a Prefect run per turn), then "
        "the maintain flow's table upkeep with old versions dropped.",
        "",
        "Reproduce: `.venv/bin/python tests/integration/reliability_report.py "
        "--markdown docs/reliability.md` (add `--growth-polls 10000` for the full growth run).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "reliability.json"))
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--growth-polls", type=int, default=None)
    ap.add_argument("--upkeep-every", type=int, default=None)
    ap.add_argument("pytest_args", nargs="*")
    ap.add_argument("--from-json", default=None, help="only render this figures file")
    args = ap.parse_args(argv)
    if args.from_json:
        fig = json.loads(Path(args.from_json).read_text())
        Path(args.markdown or "/dev/stdout").write_text(markdown(fig))
        return 0
    fd, figures = tempfile.mkstemp(prefix="reliability-", suffix=".jsonl")
    os.close(fd)
    env = {**os.environ, "RELIABILITY_FIGURES": figures}
    if args.growth_polls:
        env["RELIABILITY_GROWTH_POLLS"] = str(args.growth_polls)
    if args.upkeep_every:
        env["RELIABILITY_GROWTH_UPKEEP_EVERY"] = str(args.upkeep_every)
    started = time.monotonic()
    code = subprocess.call(
        [sys.executable, "-m", "pytest", *TESTS, *args.pytest_args], cwd=ROOT, env=env
    )
    lines = [json.loads(x) for x in Path(figures).read_text().splitlines() if x.strip()]
    Path(figures).unlink(missing_ok=True)
    fig = summarise(lines)
    fig["run"] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - started, 1),
        "pytest_exit": code,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 1) for x in os.getloadavg()],
    }
    Path(args.out).write_text(json.dumps(fig, indent=2, sort_keys=True) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(markdown(fig))
    print(json.dumps(fig["totals"]), file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
