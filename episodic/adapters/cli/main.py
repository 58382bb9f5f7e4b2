"""The `episodic` command line."""

from __future__ import annotations

import gc
import json
import sys
from datetime import datetime
from pathlib import Path

import typer

from episodic.adapters.cli.context import for_user, memory
from episodic.adapters.cli.guard import GuardedTyper, fail, preflight
from episodic.adapters.cli.options import show_progress, spinner
from episodic.adapters.cli.output import (
    clip,
    console,
    err,
    esc,
    print_json,
    recall_row,
    show,
    show_ingest,
    views_json,
)
from episodic.errors import ExitCode

# exit codes: episodic.errors.ExitCode; settings checked first and failures
# mapped: episodic.adapters.cli.guard; the one Memory: episodic.adapters.cli.context
app = GuardedTyper(add_completion=False, no_args_is_help=True, help=__doc__)
app.callback()(preflight)
eval_app = GuardedTyper(no_args_is_help=True, help="Measure against public data with ground truth.")
app.add_typer(eval_app, name="eval")
train_app = GuardedTyper(no_args_is_help=True, help="Refit learned components from public data.")
app.add_typer(train_app, name="train")

SHORT_ID = 12  # the id prefix tables print; `episode` and `history` take it


def _require_data(path: Path) -> None:
    if not path.exists():
        fail(ExitCode.USAGE, f"{path} not found (the public data lives in ../shared/data)")


def _stamp(at: datetime | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    return at.strftime(fmt) if at else ""


@app.command()
def ingest(
    path: Path,
    fmt: str = typer.Option(
        "auto", "--format", help="auto|jsonl|openai|anthropic|claude-code|locomo"
    ),
    user: str | None = typer.Option(None, "--user", help="user id (overrides the source)"),
    stream: str | None = typer.Option(None, "--stream", help="stream id (overrides the source)"),
    as_json: bool = typer.Option(
        False, "--json", help="print the report as JSON, each rejected line with its reason"
    ),
) -> None:
    """Append a transcript to the immutable raw log (idempotent).

    Generic JSONL (--format jsonl) is one turn a line: `role` (required: user,
    assistant, tool or system; human/ai/model/bot/function/developer are
    accepted as aliases), `text` (or `content`), `ts` (or `timestamp`: ISO 8601
    or epoch seconds; default: a synthetic clock), `user_id`, `stream_id`
    (default: the file's stem), `kind` (optional: user-question,
    user-correction, assistant-answer, tool-call, tool-error, tool-success,
    system-event, other; derived when absent) and `meta` (an object). A line
    that is not such an object is rejected with its line number and reason
    and kept whole in the rejected_input table (`episodic rejected --user U`);
    the command then exits 1."""
    from rich.progress import Progress

    from episodic.errors import IngestError

    for option, value in (("--user", user), ("--stream", stream)):
        if value is not None and not value.strip():
            fail(ExitCode.USAGE, f"{option} is blank: give an id, or leave it out")
    m = memory()
    try:
        if as_json:
            report = m.ingest(path, fmt, user_id=user, stream_id=stream)
        else:
            with Progress(console=err, transient=True) as bar:
                size = path.stat().st_size if path.is_file() else 1  # else: IngestError below
                job = bar.add_task(f"ingest {esc(path.name)}", total=max(1, size))
                report = m.ingest(
                    path,
                    fmt,
                    user_id=user,
                    stream_id=stream,
                    progress=lambda done, total: bar.update(
                        job, completed=done, total=max(1, total)
                    ),
                )
    except IngestError as e:
        fail(ExitCode.USAGE, str(e))
    show_ingest(report, as_json, str(path))
    raise typer.Exit(1 if report.rejected else 0)


def _check_shard(value: str | None) -> str | None:
    """A bad --shard is a usage error before Prefect starts."""
    from episodic.shards import Shard

    if value is not None:
        try:
            Shard.parse(value)
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
    return value


@app.command()
def consolidate(
    user: str | None = typer.Option(None, "--user"),
    flush: bool = typer.Option(False, "--flush", help="also close every open episode"),
    shard: str | None = typer.Option(
        None,
        "--shard",
        help="I/N: only the users of that shard (N runs on N workers)",
        callback=_check_shard,
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run the consolidate flow now (ephemeral Prefect API, or PREFECT_API_URL)."""
    m = for_user(user) if user is not None else memory()
    with spinner("consolidating", show_progress(as_json)):
        summary = m.consolidate(user, flush=flush, shard=shard)
    if as_json:
        print_json(summary)
        return
    console.print(
        f"turns processed [bold]{summary['turns_processed']}[/bold], episodes closed "
        f"[bold]{summary['episodes_closed']}[/bold], LLM calls {summary['llm_calls']}, "
        f"{summary['seconds']} s"
    )
    for reason, n in sorted(summary["by_reason"].items(), key=lambda kv: -kv[1]):
        console.print(f"  {esc(reason):18} {n}")


@app.command()
def episodes(
    user: str = typer.Option(..., "--user"),
    stream: str | None = typer.Option(None, "--stream"),
    limit: int | None = typer.Option(None, "--limit", help="only the most recent N"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List a user's episodes, oldest first: id (`episodic episode ID` shows
    one), turn range, why it was cut, salience, summary."""
    eps = for_user(user).episodes(user, stream_id=stream, limit=limit)
    show(
        as_json,
        views_json(eps),
        f"episodes of {user}",
        ("episode", "stream", "turns", "started", "reason", "score", "sal", "source", "summary"),
        (
            (
                e.episode_id[:SHORT_ID],
                e.stream_id,
                f"{e.first_seq}-{e.last_seq}",
                _stamp(e.started_at),
                e.reason,
                f"{e.boundary_score:.2f}",
                str(e.salience or "-"),
                e.salience_source or "pending",
                e.summary[:70],
            )
            for e in eps
        ),
    )


@app.command()
def facts(
    user: str = typer.Option(..., "--user"),
    all_rows: bool = typer.Option(False, "--all", help="include superseded and deleted facts"),
    as_of: datetime | None = typer.Option(None, "--as-of", help="what was believed true then"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """A user's facts; --all shows the whole history with validity intervals."""
    rows = for_user(user).facts(user, as_of=as_of, include_inactive=all_rows)
    show(
        as_json,
        views_json(rows),
        f"facts of {user}",
        ("fact_id", "status", "valid_from", "valid_to", "text"),
        (
            (
                f.fact_id[:SHORT_ID],
                f.status,
                _stamp(f.valid_from),
                _stamp(f.valid_to),
                f.text,
            )
            for f in rows
        ),
    )


@app.command()
def history(
    fact_id: str,
    user: str = typer.Option(..., "--user"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Every ADD / UPDATE / DELETE / NOOP decision on a fact and its chain
    (a unique prefix of the fact's id will do)."""
    rows = for_user(user).fact_history(user, fact_id)
    show(
        as_json,
        views_json(rows),
        f"history of {fact_id}",
        ("at", "event", "old", "new", "episode", "decided_by"),
        (
            (
                _stamp(h.at, "%Y-%m-%d %H:%M:%S"),
                h.event,
                h.old_text or "",
                h.new_text or "",
                h.episode_id[:SHORT_ID],
                h.decided_by,
            )
            for h in rows
        ),
    )


@app.command()
def search(
    query: str,
    user: str = typer.Option(..., "--user"),
    k: int = typer.Option(10, "-k", "--k"),
    kinds: str = typer.Option("turns,facts,reflections", "--kinds"),
    recency: float = typer.Option(0.1, "--recency-weight", help="weight of recency, 0-10"),
    importance: float = typer.Option(0.1, "--importance-weight", help="weight of importance, 0-10"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Search a user's memory: hybrid hits on turns, facts and reflections, each
    with the turns it returns, its episode and every part of its score."""
    from episodic.retrieval import ScoreWeights
    from episodic.service.search import MemoryOptions

    try:  # a bad option is a usage error whether or not the user exists
        if not query.strip():
            raise ValueError("the query is empty")
        opts = MemoryOptions(
            k=k,
            kinds=tuple(x.strip() for x in kinds.split(",") if x.strip()),
            weights=ScoreWeights(recency_weight=recency, importance_weight=importance),
        )
    except ValueError as e:
        fail(ExitCode.USAGE, str(e))
    m = for_user(user)
    hits = m.search(user, query, k=opts.k, kinds=opts.kinds, weights=opts.weights)
    show(
        as_json,
        views_json(hits),
        f"{query!r} for {user}",
        ("score", "kind", "rel", "rec", "imp", "turn", "episode", "text"),
        (
            (
                f"{h.score:.3f}",
                h.kind,
                f"{h.relevance:.2f}",
                f"{h.recency:.2f}",
                f"{h.importance:.2f}",
                "-" if h.seq is None else str(h.seq),
                (h.episode_id or "-")[:SHORT_ID],
                clip(h.text, 160),
            )
            for h in hits
        ),
    )
    m.close()  # the results are out; the recall bookkeeping follows


@app.command()
def episode(
    episode_id: str,
    user: str = typer.Option(..., "--user"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Show one episode of a user with its turns (the short id `episodes` and
    `search` print will do)."""
    e = for_user(user).episode(user, episode_id)
    if as_json:
        print_json(e.as_json())
        return
    console.print(
        f"episode {e.episode_id} ({e.stream_id} {e.first_seq}-{e.last_seq}, {e.reason})",
        markup=False,
    )
    for t in e.turns:  # the turn's short id: `forget --turn` takes it
        line = f"  {t.seq:>6} {t.turn_id[:12]} {t.speaker}: {clip(t.text, 160)}"
        console.print(line, markup=False)


@app.command()
def reflections(
    user: str = typer.Option(..., "--user"),
    all_rows: bool = typer.Option(False, "--all", help="include archived reflections"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List a user's reflections with the episodes and facts they cite."""
    refl = for_user(user).reflections(user, include_archived=all_rows)
    show(
        as_json,
        views_json(refl),
        f"reflections of {user}",
        ("created", "imp", "episodes", "facts", "text"),
        (
            (
                _stamp(r.created_at),
                f"{r.importance:.0f}",
                str(len(r.evidence_episode_ids)),
                str(len(r.evidence_fact_ids)),
                clip(r.text, 240),
            )
            for r in refl
        ),
    )


@app.command()
def demo() -> None:
    """Ingest the bundled sample and consolidate it: the main job, end to end."""
    from episodic.adapters.cli.demo import run_demo

    run_demo(console, memory())


@eval_app.command("segment")
def eval_segment(
    dataset: str = typer.Option(..., "--dataset", help="dialseg711|tiage|superdialseg"),
    path: Path = typer.Option(..., "--path"),
    embedder: str = typer.Option("minilm", "--embedder"),
    limit: int | None = typer.Option(None, "--limit"),
    cache: Path | None = typer.Option(None, "--cache", help="keep embeddings here (.npz)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Pk, WindowDiff and boundary F1 of the online detector, its baselines and ablations."""
    from episodic.bench.segment_eval import run_segment_eval
    from episodic.embed import make_embedder

    _require_data(path)
    with spinner(f"evaluating on {dataset}", show_progress(as_json)):
        res = run_segment_eval(
            dataset, str(path), make_embedder(embedder), limit=limit, cache_dir=cache
        )
    methods = {"detector": res, **res.get("baselines", {})}
    show(
        as_json,
        res,
        f"{dataset}: {res.get('n_dialogues')} dialogues",
        ("method", "Pk", "WindowDiff", "F1"),
        (
            (name, f"{m['pk']:.3f}", f"{m['windowdiff']:.3f}", f"{m.get('f1', 0):.3f}")
            for name, m in methods.items()
        ),
    )


@train_app.command("segment")
def train_segment(
    data: Path = typer.Option(Path("../shared/data"), "--data", help="the public data folder"),
    out: Path | None = typer.Option(
        None, "--out", help="write the parameters here (default: the packaged combiner_v1.npz)"
    ),
    embedder: str = typer.Option("minilm", "--embedder"),
    cache: Path | None = typer.Option(None, "--cache", help="keep embeddings here (.npz)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Refit the boundary combiner on SuperDialseg validation + TIAGE train; print CV scores."""
    from episodic.bench.segment_train import train
    from episodic.embed import make_embedder

    _require_data(data)
    if out is None:
        from importlib import resources

        out = Path(str(resources.files("episodic.segment").joinpath("combiner_v1.npz")))
    with spinner("fitting the boundary combiner", show_progress(as_json)):
        res = train(data, make_embedder(embedder), cache_dir=cache, out=out)
    show(
        as_json,
        res,
        f"combiner v{res['version']} -> {res.get('written')}",
        ("model", "threshold", "SuperDialseg CV Pk", "TIAGE dev Pk"),
        (
            (
                name,
                f"{m['threshold']:.3f}",
                f"{m['superdialseg_cv_pk']:.3f}",
                f"{m['tiage_dev_pk']:.3f}",
            )
            for name, m in res["models"].items()
        ),
    )


@eval_app.command("locomo")
def eval_locomo(
    path: Path = typer.Option(..., "--path"),
    k: str = typer.Option("5,10,25", "--k"),
    budget: int = typer.Option(50, "--budget", help="equal budget of retrieved turns"),
    embedder: str = typer.Option("minilm", "--embedder"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Evidence recall@k on LoCoMo: episodes against fixed windows, sessions, turns."""
    from episodic.bench.locomo_eval import run_locomo_eval

    _require_data(path)
    with spinner("evaluating on LoCoMo", show_progress(as_json)):
        res = run_locomo_eval(
            path, ks=[int(x) for x in k.split(",")], budget=budget, embedder=embedder
        )
    show(
        as_json,
        res,
        f"LoCoMo evidence recall ({res['n_questions']} questions)",
        (
            "method",
            *(f"R@{kk}" for kk in res["ks"]),
            f"R@{budget} turns",
            f"R@{res['token_budget']} tokens",
            "turns/unit",
        ),
        (recall_row(name, m, res["ks"]) for name, m in res["methods"].items()),
    )
    if not as_json:
        for key, best in res["best_baseline"].items():
            typer.echo(
                f"{key}: shipped {best['shipped_margin']:+.3f} over the best "
                f"non-segmented baseline ({best['method']} {best['value']:.3f})"
            )


@eval_app.command("current-truth")
def eval_current_truth(
    embedder: str = typer.Option("minilm", "--embedder"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """current-truth@1 on the knowledge-update cases (a fact about the user changes
    between two conversations; is the current value the first hit?), in-sample."""
    from episodic.bench.current_truth import run_current_truth

    with spinner("evaluating current truth", show_progress(as_json)):
        res = run_current_truth(embedder=embedder)
    show(
        as_json,
        res,
        f"current-truth@1 {res['current_truth_at_1']:.2f} ({res['passed']}/{res['n_cases']}); "
        f"asked in the first person {res['first_person_passed']}/{res['first_person_cases']}",
        ("case", "ok", "first hit"),
        ((c["case"], "yes" if c["ok"] else "no", c["top"][:70]) for c in res["cases"]),
    )


@eval_app.command("agent-recall")
def eval_agent_recall(
    embedder: str | None = typer.Option(None, "--embedder", help="default: the default one"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Where the answer ranks for twenty questions about the demo's agent
    transcript, written blind (MRR, hit@1, hit@5 of the first evidence turn)."""
    from episodic.bench.agent_recall import run_agent_recall

    with spinner("evaluating recall on the agent transcript", show_progress(as_json)):
        res = run_agent_recall(embedder=embedder)
    show(
        as_json,
        res,
        f"MRR {res['mrr']:.3f}, hit@1 {res['hit_at_1']:.2f}, hit@5 {res['hit_at_5']:.2f}"
        f" ({res['n_questions']} questions)",
        ("question", "first evidence turn"),
        ((r["q"][:70], str(r["first"] or "-")) for r in res["questions"]),
    )


@app.command()
def bench(
    name: str = typer.Argument(
        ...,
        help="segment|pipeline|incremental|retrieval|memory|reference|embed-backends|llm|all"
        "|scale-out|embed-default",
    ),
    as_json: bool = typer.Option(False, "--json"),
    turns: int | None = typer.Option(None, "--turns", help="scale down (smoke runs)"),
    workers: str = typer.Option("1,2", "--workers", help="scale-out: worker counts, e.g. 1,2"),
) -> None:
    """Run a benchmark; prints its figures beside their targets."""
    from episodic.bench.run import run_bench

    counts = tuple(int(w) for w in workers.split(",") if w.strip())
    with spinner(f"benchmark {name}", show_progress(as_json)):
        res = run_bench(name, turns=turns, workers=counts)
    if as_json:
        print_json(res)
    else:
        console.print_json(json.dumps(res, default=str))


@app.command()
def reflect(
    user: str | None = typer.Option(None, "--user"),
    force: bool = typer.Option(False, "--force", help="reflect even below the threshold"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run the reflect flow now."""
    from flows.reflect import reflect as flow

    res = flow(user=user, force=force, memory=for_user(user) if user is not None else memory())
    if as_json:
        print_json(res)
    else:
        for uid, r in res.items():
            console.print(
                f"{uid}: due={r['due']} pending salience={r['pending_salience']:.0f} "
                f"written={r.get('written', 0)}",
                markup=False,
            )


@app.command()
def maintain(
    user: str | None = typer.Option(None, "--user"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run the maintain flow now: decay, archive, compact."""
    from flows.maintain import maintain as flow

    res = flow(user=user, memory=for_user(user) if user is not None else memory())
    if as_json:
        print_json(res)
    else:
        console.print(f"decayed {res['decayed']}, archived {res['archived']}")
        for row in res["tables"]:
            console.print(
                f"  {row['table']:16} rows {row['rows']:>7}  versions {row['versions']}"
                f"  fragments {row['fragments']}"
            )


@app.command()
def soak(
    minutes: float = typer.Option(30.0, "--minutes", help="how long to run"),
    steps: int = typer.Option(25, "--steps", help="steps per machine run"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The stateful soak: hostile writes, kills mid-consolidation, imports and
    forgets on a temporary store, checked after every step (needs the dev extra)."""
    from episodic.bench.soak import run_soak

    res = run_soak(minutes, steps=steps)
    if as_json:
        print_json(res)
    else:
        console.print(
            f"{res['runs']} runs, {res['steps']} steps, {res['kills']} kills, "
            f"{res['turns_checked']} turns checked, {res['violations']} invariant violations"
        )
    raise typer.Exit(1 if res["violations"] else 0)


# commands that live in their own modules
from episodic.adapters.cli import agents, alerts, corrections, forget, llm, ops  # noqa: E402

ops.register(app)
alerts.register(app)
agents.register(app)
llm.register(app)
forget.register(app)
corrections.register(app)


def main() -> None:
    """The console script: Prefect's environment first (before prefect loads),
    quiet on a terminal except for `serve`, whose runs log at INFO in the UI."""
    import signal

    from episodic.config import apply_prefect_env

    apply_prefect_env(quiet=sys.argv[1:2] != ["serve"])
    # SIGTERM ends a command as Ctrl-C does: its `finally` blocks and exit
    # handlers run, so the children it started (Prefect's temporary server,
    # llama.cpp) are stopped, not left running without a parent
    signal.signal(signal.SIGTERM, _terminated)
    try:
        app()
    finally:
        # the command is done and its memory closed; the interpreter's exit
        # would now collect every object of every module (about 0.12 s with
        # LanceDB's and pydantic's classes loaded): frozen, they are left to
        # the process's end. Exit handlers and module teardown still run.
        gc.freeze()


def _terminated(signum: int, _: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


if __name__ == "__main__":
    main()
