"""The ways in for agents: `api` (HTTP), `keys` (API keys), `mcp` (stdio
server) and `capture` (agent hooks and growing files). Registered on the
main app by `register(app)`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from episodic.adapters.cli.context import memory
from episodic.adapters.cli.guard import GuardedTyper, fail
from episodic.adapters.cli.output import console, err, print_json, show, show_ingest
from episodic.errors import ExitCode

keys_app = GuardedTyper(no_args_is_help=True, help="API keys: one tenant each, with scopes.")
capture_app = GuardedTyper(no_args_is_help=True, help="Append what an agent wrote since last time.")


def api(
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8700, "--port"),
) -> None:
    """Serve the HTTP API (/v1, OpenAPI at /docs and /openapi.json)."""
    from episodic.adapters.http.app import serve_api

    err.print(f"episodic api on http://{host}:{port} (OpenAPI: /docs); Ctrl-C stops")
    serve_api(host, port)


def mcp(user: str = typer.Option(..., "--user", help="the one user this server serves")) -> None:
    """Serve the MCP tools remember, recall, facts and episodes on stdio."""
    from episodic.adapters.mcp.server import serve_mcp

    serve_mcp(user)


@keys_app.command("create")
def keys_create(
    user: str = typer.Option(..., "--user"),
    scopes: str = typer.Option("read,write", "--scopes", help="read, write or both"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Create a key; it is printed once and stored only as a salted HMAC."""
    wanted = tuple(s.strip() for s in scopes.split(",") if s.strip())
    try:
        key, rec = memory().create_key(user, wanted)
    except ValueError as e:
        fail(ExitCode.USAGE, str(e))
    if as_json:
        print_json({"key": key, **rec.as_dict()})
    else:
        console.print(f"key for {user} ({', '.join(rec.scopes)}), shown once:", markup=False)
        sys.stdout.write(key + "\n")


@keys_app.command("list")
def keys_list(
    user: str | None = typer.Option(None, "--user"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Keys (their ids, never the keys) with user, scopes and state."""
    rows = memory().keys.list(user)
    show(
        as_json,
        [k.as_dict() for k in rows],
        "API keys",
        ("key_id", "user", "scopes", "created", "revoked"),
        (
            (
                k.key_id,
                k.user_id,
                ",".join(k.scopes),
                f"{k.created_at:%Y-%m-%d %H:%M}" if k.created_at else "",
                f"{k.revoked_at:%Y-%m-%d %H:%M}" if k.revoked_at else "",
            )
            for k in rows
        ),
    )


@keys_app.command("revoke")
def keys_revoke(
    key_id: str = typer.Argument(..., help="the key's id (`keys list`), or the key itself"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Revoke a key (the API refuses it within 2 s). Exit 1 if none was live."""
    if key_id.startswith("ep_") and key_id.count("_") >= 2:
        key_id = key_id.split("_")[1]
    done = memory().keys.revoke(key_id)
    if as_json:
        print_json({"key_id": key_id, "revoked": done})
    else:
        state = "revoked" if done else "no live key with this id"
        console.print(f"{key_id}: {state}", markup=False)
    raise typer.Exit(0 if done else 1)


def _capture(path: Path, fmt: str, user: str, as_json: bool, override: bool = True) -> None:
    from episodic.errors import IngestError

    try:
        rep = memory().capture(path, fmt, user_id=user, override_user=override)
    except (IngestError, OSError) as e:
        fail(ExitCode.USAGE, str(e))
    show_ingest(rep, as_json, f"{rep.path}: bytes {rep.start}-{rep.end}", err)


@capture_app.command("claude-code")
def capture_claude_code(
    user: str = typer.Option("default", "--user"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """A Claude Code hook (Stop, PostToolUse): reads the hook's JSON on stdin
    and appends the transcript's lines written since the last capture."""
    try:
        hook = json.loads(sys.stdin.read() or "{}")
    except ValueError as e:
        fail(ExitCode.USAGE, f"the hook input is not JSON: {e}")
    path = hook.get("transcript_path") if isinstance(hook, dict) else None
    if not isinstance(path, str) or not path:
        fail(ExitCode.USAGE, "the hook input has no transcript_path")
    _capture(Path(path).expanduser(), "claude-code", user, as_json)


@capture_app.command("drain")
def capture_drain(as_json: bool = typer.Option(False, "--json")) -> None:
    """Capture what `episodic-hook` spooled (`episodic api` does it every second)."""
    report = memory().drain_spool()
    if as_json:
        print_json(report.as_dict())
    else:
        err.print(
            f"captured {sum(c.accepted for c in report.captured)} turns from "
            f"{len(report.captured)} transcripts; dropped {len(report.dropped)}",
            markup=False,
        )


@capture_app.command("waiting")
def capture_waiting(
    user: str | None = typer.Option(None, "--user", help="only this user's"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """What `episodic-hook` spooled and nothing has captured yet: a running
    `episodic api` or `episodic mcp`, `episodic capture drain` or a consolidate
    run takes it."""
    rows = memory().spooled(user)
    if as_json:
        print_json(rows)
        return
    for r in rows:
        console.print(
            f"{r['user_id']}  {r['fmt']}  {r['path']}  waiting {r['waiting_s']:.0f} s", markup=False
        )
    if not rows:
        console.print("nothing waiting")


@capture_app.command("jsonl")
def capture_jsonl(
    path: Path,
    user: str | None = typer.Option(None, "--user", help="default: each line's user_id"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """A generic JSONL file that grows: appends the lines since the last capture."""
    _capture(path, "jsonl", user or "default", as_json, override=user is not None)


def register(app: typer.Typer) -> None:
    app.command()(api)
    app.command()(mcp)
    app.add_typer(keys_app, name="keys")
    app.add_typer(capture_app, name="capture")
