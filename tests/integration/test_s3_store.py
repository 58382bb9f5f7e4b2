"""LanceDB on object storage: a real S3 endpoint (moto's server, a subprocess
on 127.0.0.1 and a free port, stopped at the end) under
EPISODIC_DB_URI=s3://bucket/prefix. The CLI is run as a user runs it; then
two processes commit to the same tables at once and no commit may be lost
(Lance commits a version with a conditional PUT, If-None-Match: *, which the
endpoint answers 412 for the loser, who retries on the new version)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from episodic.subprocs import terminate
from tests.integration.api_support import ROOT, cli_child, cli_env, cli_json, free_port
from tests.integration.helpers import synthetic_stream, write_jsonl

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto.server")

BUCKET = "episodic-test"
REGION = "us-east-1"
# moto takes any credentials; LanceDB reads them from the usual AWS_* variables
# (without them the AWS SDK would ask the instance metadata address: never here)
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_EC2_METADATA_DISABLED": "true",
}
ROUNDS = 12  # commits per process in the concurrent test (x2 tables)
USERS = ("ua", "ub")


@dataclass
class S3:
    endpoint: str
    log: Path

    def env(self, prefix: str) -> dict[str, str]:
        """What a user sets to put the store at s3://BUCKET/prefix."""
        options = {"endpoint": self.endpoint, "allow_http": True, "region": REGION}
        return {
            "EPISODIC_DB_URI": f"s3://{BUCKET}/{prefix}",
            "EPISODIC_DB_STORAGE_OPTIONS": json.dumps(options),
            **CREDENTIALS,
        }

    def client(self) -> Any:
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )

    def keys(self, prefix: str) -> list[str]:
        pages = (
            self.client()
            .get_paginator("list_objects_v2")
            .paginate(Bucket=BUCKET, Prefix=prefix + "/")
        )
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def refused_manifests(self) -> int:
        """Manifest PUTs the endpoint refused (412: another commit won that
        version), from the server's request log."""
        lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        return sum(1 for ln in lines if ".manifest HTTP" in ln and '" 412 ' in ln)


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3]:
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = S3(f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"moto exited {proc.returncode}: {log.read_text()}")
            try:
                server.client().create_bucket(Bucket=BUCKET)
                break
            except Exception:  # not listening yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield server
    finally:
        terminate(proc, grace_s=20)


@pytest.mark.slow  # nine CLI processes against the endpoint: minutes on 2 cores
@pytest.mark.usefixtures("prefect_harness")
def test_consolidate_on_s3_through_the_cli(s3: S3, tmp_path: Path) -> None:
    import prefect.settings

    home = tmp_path / "home"
    env = {**cli_env(home), **s3.env("cli")}
    env["PREFECT_API_URL"] = str(prefect.settings.PREFECT_API_URL.value())  # the harness's
    turns = synthetic_stream("u1") + synthetic_stream("u2", n_per_topic=5)
    path = write_jsonl(tmp_path / "turns.jsonl", turns)

    assert cli_json(env, "ingest", str(path))["accepted"] == len(turns)
    first = cli_json(env, "consolidate")
    assert first["turns_processed"] == len(turns) and first["episodes_closed"] > 0
    again = cli_json(env, "consolidate")
    assert again["turns_processed"] == 0 and again["episodes_closed"] == 0

    status = {(r["user_id"], r["stream_id"]): r for r in cli_json(env, "status")}
    for user in ("u1", "u2"):
        st = status[(user, "s1")]
        episodes = sorted(cli_json(env, "episodes", "--user", user), key=lambda e: e["first_seq"])
        # closed episodes tile seqs 0..k with no gap or overlap; the open one holds the rest
        seqs = [s for e in episodes for s in range(e["first_seq"], e["last_seq"] + 1)]
        assert sum(e["n_turns"] for e in episodes) == len(seqs)
        assert seqs == list(range(st["raw_turns"] - st["open_episode_turns"]))
        assert st["raw_turns"] == sum(1 for t in turns if t["user_id"] == user)
    assert cli_json(env, "doctor")["ok"] is True

    hits = cli_json(env, "search", "helm staging deploy", "--user", "u1")
    assert any("helm" in json.dumps(h) for h in hits)

    stored = s3.keys("cli")
    tables = {k.split("/")[1] for k in stored}
    assert {"raw_turns.lance", "episodes.lance", "segmenter_state.lance"} <= tables
    assert any("/_versions/" in k for k in stored) and any("/data/" in k for k in stored)
    assert not (home / "lancedb").exists()  # nothing fell back to a local store


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ('{"endpoint": "http://127.0.0.1:1", "secret_access_key": "s3cr3t-v4lue"}', "credential"),
        ('{"endpoint": "s3cr3t-v4lue', "not valid JSON"),
    ],
)
def test_bad_storage_options_are_one_line_without_the_value(
    tmp_path: Path, options: str, says: str
) -> None:
    env = {**cli_env(tmp_path / "home"), "EPISODIC_DB_STORAGE_OPTIONS": options}
    res = cli_child(env, "status", "--json")
    assert res.returncode == 2 and res.stdout == ""
    assert says in res.stderr and "EPISODIC_DB_STORAGE_OPTIONS" in res.stderr
    assert "s3cr3t" not in res.stderr and "Traceback" not in res.stderr


def _child() -> None:
    """One of the two writers (run as a script): waits for the start file,
    then ROUNDS times saves its user's checkpoint (a conditional
    merge_insert on the shared segmenter_state table) and appends a row to
    the shared commit_log table."""
    import pyarrow as pa

    from episodic.config import load_settings
    from storage.db import open_store
    from storage.state import Checkpoints

    user, go, rounds = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    store = open_store(load_settings())
    checkpoints, log = Checkpoints(store), store.db.open_table("commit_log")
    (go.parent / f"ready-{user}").touch()
    while not go.exists():
        time.sleep(0.01)
    for i in range(rounds):
        cp = checkpoints.load(user, "s1")
        checkpoints.save(replace(cp, watermark=i))
        log.add(pa.table({"key": [f"{user}-{i}"]}))


def test_two_processes_commit_to_the_same_tables_at_once(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa

    from episodic.config import Settings
    from storage.db import open_store
    from storage.state import Checkpoints

    s3_env = s3.env("concurrent")
    for name, value in CREDENTIALS.items():  # this process opens the store too
        monkeypatch.setenv(name, value)
    settings = Settings(
        db_uri=s3_env["EPISODIC_DB_URI"],
        db_storage_options=json.loads(s3_env["EPISODIC_DB_STORAGE_OPTIONS"]),
        embedder="hash",
    )
    env = {**os.environ, **s3_env, "PYTHONPATH": str(ROOT)}
    # both tables exist before the writers start (creating one is a commit too)
    store = open_store(settings)
    Checkpoints(store)
    store.db.create_table("commit_log", schema=pa.schema([("key", pa.string())]))
    refused_before = s3.refused_manifests()

    go = tmp_path / "go"
    child = "from tests.integration.test_s3_store import _child; _child()"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", child, user, str(go), str(ROUNDS)],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for user in USERS
    ]
    try:
        deadline = time.monotonic() + 300
        while not all((tmp_path / f"ready-{u}").exists() for u in USERS):
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            assert time.monotonic() < deadline, "writers did not start"
            time.sleep(0.05)
        go.touch()  # both start committing at once
        results = [p.communicate(timeout=600) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in results]

    fresh = open_store(settings)
    for user in USERS:
        cp = Checkpoints(fresh).load(user, "s1")
        assert (cp.version, cp.watermark) == (ROUNDS, ROUNDS - 1)
    keys = fresh.db.open_table("commit_log").to_arrow()["key"].to_pylist()
    assert sorted(keys) == sorted(f"{u}-{i}" for u in USERS for i in range(ROUNDS))
    # how often a writer lost a race for a version and retried (varies by run)
    print(f"refused manifest PUTs: {s3.refused_manifests() - refused_before}")
