"""Operator commands (status, usage, doctor, plot, serve, rejected, export, import).
Registered on the main app."""

from __future__ import annotations

import signal
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from typing_extensions import TypedDict  # pydantic validates it on Python 3.11

from episodic.adapters.cli.context import for_user, memory
from episodic.adapters.cli.guard import fail
from episodic.adapters.cli.output import console, err, esc, print_json, show
from episodic.errors import ExitCode

if TYPE_CHECKING:
    from episodic.service.views import UsageView


class RejectedRow(TypedDict):
    """A row of the rejected_input table, as `rejected` reads it."""

    reject_id: str
    stream_id: str
    source: str
    line_no: int
    reason: str
    raw: bytes
    at: datetime


def status(
    user: str | None = typer.Option(None, "--user", help="only this user's streams"),
    tag: str | None = typer.Option(
        None, "--tag", help="only the user of this tag (the hash in run names, reports, alerts)"
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Per user and stream: raw turns, watermark, lag, open episode, last run."""
    from episodic.models import user_tag
    from episodic.service.status import human_age

    if user is not None and tag is not None:
        fail(ExitCode.USAGE, "give --user or --tag, not both")
    m = for_user(user) if user is not None else memory()
    rows = m.status(user)
    if tag is not None:
        rows = [r for r in rows if user_tag(r.user_id) == tag]
        if not rows:
            fail(ExitCode.REJECTED, f"no user's streams have the tag {tag!r}")
    spooled = [] if as_json else m.spooled(user)
    if spooled:
        # a hook wired with nothing to drain it: say so, or its turns look lost
        err.print(
            f"{len(spooled)} transcript(s) spooled by `episodic-hook`, not captured yet: "
            "`episodic capture drain` (a running `episodic api` or `episodic mcp` does it "
            "every second); `episodic capture waiting` lists them",
            markup=False,
        )
    if not rows and not as_json:
        if not spooled:
            console.print("no streams yet: `episodic ingest FILE` or `episodic demo`")
        return
    show(
        as_json,
        [r.as_dict() for r in rows],
        "streams",
        (
            "user",
            "stream",
            "raw turns",
            "watermark",
            "lag turns",
            "oldest waiting",
            "open turns",
            "episodes",
            "last run",
            "state",
        ),
        (
            (
                r.user_id,
                r.stream_id,
                str(r.raw_turns),
                str(r.watermark),
                str(r.unprocessed_turns),
                human_age(r.oldest_unprocessed_age_s),
                str(r.open_episode_turns),
                str(r.episodes),
                r.last_run or "-",
                r.last_run_state or "-",
            )
            for r in rows
        ),
    )
    if not as_json:  # the JSON stays one row per stream; `episodic usage --json` has these
        for uid in sorted({r.user_id for r in rows}):
            console.print(_usage_line(m.usage(uid)), markup=False)


def _usage_line(u: UsageView) -> str:
    cost = f"${u.cost_usd:.4f}" + (
        f" (+{u.unpriced_runs} unpriced runs)" if u.unpriced_runs else ""
    )
    return (
        f"{u.user_id}: model use over the last {u.runs} runs: {u.calls} calls, "
        f"{u.cache_hits} cache hits, {u.input_tokens}/{u.output_tokens} tokens in/out, {cost}"
    )


def usage(
    user: str = typer.Option(..., "--user"),
    runs: int = typer.Option(20, "--runs", min=1, help="how many recent runs"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """What consolidating a user's memory asked the model: calls, cache hits,
    tokens and cost per run (counts only), newest first."""
    u = for_user(user).usage(user, limit=runs)
    show(
        as_json,
        u.as_json(),
        _usage_line(u),
        ("run", "model", "calls", "hits", "tokens in", "tokens out", "wait s", "cost"),
        (
            (
                r.run,
                f"{r.provider}/{r.model}",
                str(r.calls),
                str(r.cache_hits),
                str(r.input_tokens),
                str(r.output_tokens),
                f"{r.wait_s:.1f}",
                "-" if r.cost_usd is None else f"${r.cost_usd:.4f}",
            )
            for r in u.recent
        ),
    )


def doctor(
    user: str | None = typer.Option(None, "--user", help="only this user's streams"),
    repair: bool = typer.Option(False, "--repair", help="rewrite the derivable: stale heads"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Check the raw log and segmentation: seqs, heads, every turn in one episode.

    Exit 0 when every invariant holds (after --repair: when what was wrong is
    repaired), 1 when a problem remains."""
    report = (for_user(user) if user is not None else memory()).doctor(user, repair=repair)
    if as_json:
        print_json(report.as_dict())
    else:
        for r in report.repaired:
            console.print(
                f"[green]repaired[/green] head of {esc(r['user_id'])}/{esc(r['stream_id'])}: "
                f"seq {r['head_seq'][0]} -> {r['head_seq'][1]}, "
                f"turns {r['n_turns'][0]} -> {r['n_turns'][1]}"
            )
        for p in report.problems:
            fix = " (--repair fixes it)" if p.repairable else ""
            console.print(
                f"[red]{p.kind}[/red] {esc(p.user_id)}/{esc(p.stream_id)}: {p.count}, "
                f"{esc(p.detail)}{fix}"
            )
        for n in report.notes:
            console.print(
                f"note: {n.kind} {n.user_id}/{n.stream_id}: {n.count}, {n.detail}", markup=False
            )
        n_bad = len(report.problems)
        verdict = "[green]ok[/green]" if report.ok else f"[red]{n_bad} problems[/red]"
        console.print(f"{verdict}: {report.streams_checked} streams checked")
    raise typer.Exit(0 if report.ok else 1)


def plot(
    user: str = typer.Option(..., "--user"),
    stream: str | None = typer.Option(None, "--stream", help="default: the user's busiest"),
    out: Path | None = typer.Option(
        None, "--out", help="PNG to write (default: the user's latest picture under EPISODIC_HOME)"
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Draw a stream over time: turns, signal scores against thresholds, cuts and reasons."""
    import shutil

    from episodic.service.plot_path import latest_plot_path
    from episodic.service.timeline import PlotError, plot_stream

    m = for_user(user)
    latest = latest_plot_path(m.settings.home, user)
    target = out or latest
    try:
        tl = plot_stream(m.rt, user, stream, target)
    except PlotError as e:
        fail(ExitCode.USAGE, str(e))
    if target != latest:  # the consolidate artifact names the latest picture
        latest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(target, latest)
    if as_json:
        print_json(
            {
                "path": str(target),
                "stream_id": tl.stream_id,
                "turns": len(tl.turns),
                "episodes": len(tl.episodes),
                "cuts": len(tl.cuts),
            }
        )
        return
    console.print(
        f"{target}: stream {tl.stream_id}, {len(tl.turns)} turns, "
        f"{len(tl.episodes)} episodes, {len(tl.cuts)} cuts",
        markup=False,
    )


def rejected(
    user: str = typer.Option(..., "--user"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Input lines ingest refused, kept whole: source, line number, reason."""
    from pydantic import TypeAdapter

    stored = TypeAdapter(list[RejectedRow]).validate_python(for_user(user).rt.raw.rejected(user))
    rows = sorted(stored, key=lambda r: (r["source"], r["line_no"], r["at"]))
    show(
        as_json,
        [
            {
                "reject_id": r["reject_id"],
                "stream_id": r["stream_id"],
                "source": r["source"],
                "line": r["line_no"],
                "reason": r["reason"],
                "raw": r["raw"].decode("utf-8", errors="replace"),
                "at": r["at"],
            }
            for r in rows
        ],
        f"rejected input of {user}",
        ("source", "line", "reason", "raw"),
        (
            (
                r["source"],
                str(r["line_no"]),
                r["reason"],
                r["raw"].decode("utf-8", errors="replace")[:60],
            )
            for r in rows
        ),
    )


def export(
    user: str = typer.Option(..., "--user"),
    out: Path = typer.Option(..., "--out", help="directory to write (created)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Write a user's raw turns, episodes, facts and their history, reflections,
    checkpoints and rejected input as Parquet (one file a table) to --out."""
    from storage.transfer import TransferError

    try:
        report = for_user(user).export(user, out)
    except TransferError as e:
        fail(ExitCode.USAGE, str(e))
    if as_json:
        print_json(report.as_dict())
        return
    console.print(f"exported {user} to {out}", markup=False)
    for name, n in report.rows.items():
        console.print(f"  {name:18} {n:>8}")


def import_(
    src: Path = typer.Argument(..., help="a directory `episodic export` wrote"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Load an export into this store, same ids; importing twice equals once."""
    from storage.transfer import TransferError

    try:
        report = memory().import_(src)
    except TransferError as e:
        fail(ExitCode.USAGE, str(e))
    if as_json:
        print_json(report.as_dict())
        return
    console.print(f"imported {report.user_id} from {src}", markup=False)
    for name, n in report.rows.items():
        new, upd = report.inserted.get(name, 0), report.updated.get(name, 0)
        console.print(f"  {name:18} {n:>8}  new {new}, already there {upd}")


def serve(
    limit: int | None = typer.Option(None, "--limit", min=1, help="most flow runs at once"),
) -> None:
    """Serve consolidate, reflect, maintain and ingest with their schedules (Ctrl-C stops)."""
    from episodic.adapters.cli.serve import schedules, serve_all

    # Prefect's runner takes SIGTERM over once started; before that, stop the same way
    signal.signal(signal.SIGTERM, _interrupt)
    err.print("serving " + ", ".join(f"{n} ({c or 'by hand'})" for n, c in schedules().items()))
    err.print("trigger one: prefect deployment run 'consolidate/consolidate'; stop: Ctrl-C")
    try:
        serve_all(limit=limit)
    except (KeyboardInterrupt, SystemExit):
        pass
    err.print("episodic serve: stopped; schedules paused")


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def register(app: typer.Typer) -> None:
    """Add the operator commands to `app`."""
    app.command()(status)
    app.command()(usage)
    app.command()(doctor)
    app.command()(plot)
    app.command()(serve)
    app.command()(rejected)
    app.command()(export)
    app.command("import")(import_)
