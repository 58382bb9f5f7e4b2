"""`consolidate --shard I/N`: N runs (one per worker) split the users between
them, each user in exactly one, and together do what one unsharded run does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from episodic.adapters.cli.main import app
from episodic.adapters.embedded import Memory
from episodic.shards import Shard
from flows.consolidate import consolidate
from tests.integration.helpers import make_memory, synthetic_stream, write_jsonl

pytestmark = pytest.mark.usefixtures("prefect_harness")

USERS = [f"user-{i}" for i in range(6)]


def _consolidate(memory: Memory, shard: str | None = None) -> dict[str, Any]:
    out = consolidate(flush=True, shard=shard, memory=memory)
    assert isinstance(out, dict), out
    return out


def test_shards_split_the_users_and_together_cover_them(tmp_path: Path) -> None:
    memory = make_memory(tmp_path / "home")
    path = write_jsonl(tmp_path / "in.jsonl", [t for u in USERS for t in synthetic_stream(user=u)])
    assert memory.ingest(path).accepted == 6 * 24
    runs = [_consolidate(memory, f"{i}/2") for i in range(2)]
    done = [set(r["users"]) for r in runs]
    assert done[0] | done[1] == set(USERS) and not done[0] & done[1]
    for i, users in enumerate(done):
        assert all(Shard(i, 2).holds(u) for u in users)
    assert sum(r["turns_processed"] for r in runs) == 6 * 24
    # nothing left for an unsharded poll
    assert _consolidate(memory)["turns_processed"] == 0


def test_a_bad_shard_is_a_usage_error_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EPISODIC_HOME", str(tmp_path / "home"))
    res = CliRunner().invoke(app, ["consolidate", "--shard", "2/2", "--json"])
    assert res.exit_code == 2, res.output
    assert "I/N" in res.output
