"""Two `episodic consolidate` processes started together for the same user
leave exactly the episodes one run leaves, and no turn is processed twice
(the per-user lease in storage/lease.py serialises them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from episodic.adapters.embedded import Memory
from tests.integration.helpers import make_memory, synthetic_stream, write_jsonl
from tests.integration.prefect_server import prefect_server

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]
EPISODIC = str(Path(sys.executable).parent / "episodic")


def _shape(m: Memory, user: str) -> list[tuple[str, int, int, str]]:
    return [(e.stream_id, e.first_seq, e.last_seq, e.reason) for e in m.episodes(user)]


def test_two_consolidations_at_once_equal_one(tmp_path: Path) -> None:
    turns = synthetic_stream(user="u1", n_per_topic=10) + synthetic_stream(
        user="u1", stream="s2", n_per_topic=5
    )
    src = write_jsonl(tmp_path / "t.jsonl", turns)

    one = make_memory(tmp_path / "one")
    one.ingest(src, "jsonl")
    one.consolidate("u1", flush=True)
    expected = _shape(one, "u1")
    assert expected

    home = tmp_path / "two"
    both = make_memory(home)
    both.ingest(src, "jsonl")
    # one Prefect server for both processes, as an operator runs them
    with prefect_server(tmp_path / "srv") as srv:
        env = srv.env()
        env["EPISODIC_HOME"] = str(home)  # the shared store
        env["PREFECT_LOGGING_LEVEL"] = "WARNING"
        cmd = [EPISODIC, "consolidate", "--user", "u1", "--flush", "--json"]
        procs = [
            subprocess.Popen(
                cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for _ in range(2)
        ]
        outs = [p.communicate(timeout=400) for p in procs]
    for p, (_out, errs) in zip(procs, outs, strict=True):
        assert p.returncode == 0, errs[-3000:]
    summaries = [json.loads(out[out.index("{") :]) for out, _ in outs]
    assert _shape(both, "u1") == expected
    # every turn was segmented by exactly one of the two runs
    assert sum(s["turns_processed"] for s in summaries) == len(turns)
    assert sum(s["episodes_closed"] for s in summaries) == len(expected)
    scored = [e.salience for e in both.episodes("u1")]
    assert all(1 <= s <= 10 for s in scored)
