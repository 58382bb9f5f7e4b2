"""What a command needs and cannot reach is one `error:` line and exit 2,
never a traceback (found on a walk of the README's "Operate"): a Prefect
server that is down, an object store whose endpoint is down, a scheme
LanceDB does not know, a home that cannot be created, `serve --limit 0`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.api_support import cli_child, cli_env, free_port
from tests.integration.helpers import synthetic_stream, write_jsonl

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_REGION": "us-east-1",
}


def _one_line(res: subprocess.CompletedProcess[str], says: str) -> None:
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr[-2000:]
    assert says in lines[0], lines[0]


def test_a_prefect_server_that_is_down_is_one_line(tmp_path: Path) -> None:
    env = cli_env(tmp_path / "home")
    turns = write_jsonl(tmp_path / "t.jsonl", synthetic_stream("u1", n_per_topic=2))
    assert cli_child(env, "ingest", str(turns), "--json").returncode == 0
    env["PREFECT_API_URL"] = f"http://127.0.0.1:{free_port()}/api"  # nothing listens there
    _one_line(cli_child(env, "consolidate", "--user", "u1"), "Failed to reach API")


@pytest.mark.parametrize(
    ("uri", "options", "says"),
    [
        ("s3://mem/x", {"allow_http": True}, "cannot open the store at s3://mem/x"),
        ("s4://mem/x", {}, "No object store provider found for scheme"),
    ],
)
def test_a_store_that_cannot_be_opened_is_one_line(
    tmp_path: Path, uri: str, options: dict[str, object], says: str
) -> None:
    env = {**cli_env(tmp_path / "home"), **CREDENTIALS, "EPISODIC_DB_URI": uri}
    if uri.startswith("s3"):  # an endpoint nothing answers on
        options = {**options, "endpoint": f"http://127.0.0.1:{free_port()}"}
    env["EPISODIC_DB_STORAGE_OPTIONS"] = json.dumps(options)
    res = cli_child(env, "status", "--json")
    _one_line(res, says)
    assert "EPISODIC_DB_URI" in res.stderr and "backtrace" not in res.stderr


def test_a_home_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    env = cli_env(tmp_path / "a-file" / "home")  # ENOTDIR: a storage error, exit 4
    assert cli_child(env, "status", "--json").returncode == 4
    env = cli_env(Path("/proc/no-such-home"))  # ENOENT under /proc: cannot be made
    _one_line(cli_child(env, "status", "--json"), "cannot create the store")


def test_serve_refuses_a_limit_below_one(tmp_path: Path) -> None:
    _one_line(cli_child(cli_env(tmp_path / "home"), "serve", "--limit", "0"), "--limit")
