"""A flow run with one worker thread still finishes: a user's task asks for
no second thread (its salience chunks are called, not submitted). With
PREFECT_TASKS_RUNNER_THREAD_POOL_MAX_WORKERS=1 the submitted version hung."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.integration.api_support import cli_env, cli_json
from tests.integration.reliability_support import turn_row, write_jsonl


def test_two_users_on_one_thread_finish(tmp_path: Path) -> None:
    t0 = datetime(2025, 3, 1, 9, tzinfo=UTC)
    rows = [
        turn_row(
            user,
            "s",
            "user" if i % 2 == 0 else "assistant",
            f"{user} note {i}",
            t0 + timedelta(minutes=i),
        )
        for user in ("ann", "bob")
        for i in range(12)
    ]
    path = write_jsonl(tmp_path / "turns.jsonl", rows)
    env = cli_env(tmp_path / "home") | {"PREFECT_TASKS_RUNNER_THREAD_POOL_MAX_WORKERS": "1"}

    def run(*args: str) -> dict[str, object]:
        # the 600 s timeout: the hang this guards against never returned
        result: dict[str, object] = cli_json(env, *args, timeout=600)
        return result

    assert run("ingest", str(path))["accepted"] == 24
    summary = run("consolidate", "--flush")
    assert summary["users"] == ["ann", "bob"]
    assert summary["turns_processed"] == 24
    assert sum(summary["salience_histogram"].values()) == summary["episodes_closed"]  # type: ignore[attr-defined]
