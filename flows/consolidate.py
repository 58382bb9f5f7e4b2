"""The consolidate flow: one poll over every stream with new raw turns."""

from __future__ import annotations

import os
import time
from collections import Counter
from datetime import datetime
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State
from prefect.states import Completed

from episodic.alerts import StreamLag
from episodic.llm.prices import estimated_cost_usd
from episodic.models import now_utc, user_tag
from episodic.service.embed_ahead import EmbedAhead
from episodic.service.memory import Memory
from episodic.service.runtime import Runtime
from episodic.service.segment import idle_due
from episodic.shards import Shard
from episodic.vocab import Stage
from storage.lease import user_lease
from tasks.alerts import emit_lag_alerts
from tasks.exclusion import slot_warning, user_slot
from tasks.names import from_params, user_task_name
from tasks.report import consolidate_markdown, publish_markdown
from tasks.steps import merge_facts, score_salience, segment_streams

SALIENCE_CHUNK = 500  # one read and one write per chunk: fewer, larger writes


def _work(
    rt: Runtime, user: str | None, flush: bool = False, part: Shard | None = None
) -> dict[str, list[tuple[str, int]]]:
    """Streams with turns above their watermark or an open episode the idle
    close (or `flush`) would close now, and users with episodes still to score
    or merge; with `part`, of that shard's users only. Reads only (and emits
    the lag alert, tasks/alerts.py): an idle poll stops here, without a task run."""
    marks = rt.checkpoints.progress(user)
    todo: dict[str, list[tuple[str, int]]] = {}
    waiting: dict[str, dict[str, int]] = {}  # user -> stream -> head: open, nothing new
    lags: list[StreamLag] = []
    for h in rt.raw.streams(user):
        if part is not None and not part.holds(h.user_id):
            continue  # another shard's run reads and alerts for it
        watermark, has_open = marks.get((h.user_id, h.stream_id), (-1, False))
        lags.append(
            StreamLag(h.user_id, h.stream_id, h.head_seq - watermark, watermark, h.head_seq)
        )
        if watermark < h.head_seq or (has_open and flush):
            todo.setdefault(h.user_id, []).append((h.stream_id, h.head_seq))
        elif has_open:
            waiting.setdefault(h.user_id, {})[h.stream_id] = h.head_seq
    emit_lag_alerts(rt, lags)  # EPISODIC_ALERT_LAG_TURNS
    now = now_utc()
    for uid, heads in waiting.items():
        for sid in idle_due(rt, uid, sorted(heads), now):
            todo.setdefault(uid, []).append((sid, heads[sid]))
    # a run that died after segmenting left episodes unscored or unmerged:
    # resume them even when no new turn arrives
    for uid in rt.episodes.users_with_pending(user):
        if part is None or part.holds(uid):
            todo.setdefault(uid, [])
    return todo


def consolidate_user(
    memory: Memory, user_id: str, streams: list[tuple[str, int]], flush: bool
) -> dict[str, Any]:
    """One user's consolidation, exclusive across machines (the user's Prefect
    concurrency slot, when EPISODIC_USER_SLOT=prefect), then on this machine
    (the file lock, a fast path), with the checkpoint version check as the
    last line (tasks/exclusion.py)."""
    rt = memory.rt
    logger = get_run_logger()
    across = rt.settings.user_slot == "prefect"
    with (
        user_slot(user_id, enabled=across) as slot_wait,
        user_lease(rt.store.uri, user_id) as waited,
    ):
        if slot_wait > 1.0 or waited:
            logger.info("waited for another consolidation of this user to finish")
        try:
            return _consolidate_leased(memory, user_id, streams, flush)
        except BaseException:
            _mark_run(rt, user_id, streams, "Failed")
            raise


# fan-out: one task run per user; the flow's thread-pool task runner runs
# `user_threads` users at once, the user's slot keeps one user's runs apart
consolidate_user_task = task(
    name="consolidate-user",
    task_run_name=user_task_name("user"),
    cache_policy=NO_CACHE,
)(consolidate_user)


def _mark_run(rt: Runtime, user_id: str, streams: list[tuple[str, int]], state: str) -> None:
    """Name this run and its state on each stream it touched (`episodic status`)."""
    from prefect.runtime import flow_run

    if not streams:
        return
    name = str(flow_run.name or "")
    try:
        rt.checkpoints.mark_runs(user_id, [s for s, _ in streams], name, state)
    except Exception as e:  # bookkeeping must not fail the run
        get_run_logger().warning("could not record the run on %d streams: %s", len(streams), e)


def _consolidate_leased(
    memory: Memory, user_id: str, streams: list[tuple[str, int]], flush: bool
) -> dict[str, Any]:
    rt = memory.rt
    polls = segment_streams(memory, user_id, streams, flush, n=len(streams)) if streams else []
    new_ids = [e for p in polls for e in p["episodes"]]
    pending = rt.episodes.unscored_ids(user_id)  # ids only: the rows come per chunk
    ids = list(dict.fromkeys(new_ids + pending))
    # called, not submitted: a task submitted from this (pooled) task waits for a
    # free thread, and with every thread running a user's task none comes
    # (a hang with PREFECT_TASKS_RUNNER_THREAD_POOL_MAX_WORKERS at or below the users)
    scored = [
        score_salience(
            memory, user_id, ids[i : i + SALIENCE_CHUNK], n=len(ids[i : i + SALIENCE_CHUNK])
        )
        for i in range(0, len(ids), SALIENCE_CHUNK)
    ]
    facts = merge_facts(memory, user_id)
    reflection = maybe_reflect_user(rt, user_id)
    _mark_run(rt, user_id, streams, "Completed")
    return {"polls": polls, "salience": scored, "facts": facts, "reflection": reflection}


def maybe_reflect_user(rt: Runtime, user_id: str) -> dict[str, Any] | None:
    from episodic.service.reflect import reflect_if_due

    with rt.stages.measure(Stage.REFLECTION):
        return reflect_if_due(rt, user_id)


@flow(name="consolidate", flow_run_name=from_params("consolidate"), log_prints=True)
def consolidate(
    user: str | None = None,
    flush: bool = False,
    plot: bool = False,
    shard: str | None = None,
    memory: Memory | None = None,
) -> dict[str, Any] | State[Any]:
    """Segment new turns into episodes, score them, merge their facts, reflect when due.

    `flush` closes every open episode too (end of a replay); `plot` redraws
    each processed user's timeline picture (off by default: it replays the
    stream); `shard` ("I/N") keeps only the users of that shard
    (episodic/shards.py), for N runs on N workers; `memory` is the service to
    work on (a deployment's run builds one from the environment)."""
    started = time.monotonic()
    began: datetime = now_utc()
    memory = memory or Memory()
    rt = memory.rt
    logger = get_run_logger()
    usage_before = rt.provider.usage.as_dict()
    llm_before = _llm_state(rt)
    users_before = _users_usage(rt)
    wait_before = _llm_wait(rt)
    stages_before = rt.stages.snapshot()
    part = Shard.parse(shard) if shard is not None else None  # a bad one fails first
    unsafe = slot_warning(
        rt.settings.database_uri, rt.settings.user_slot, os.environ.get("PREFECT_API_URL")
    )
    if unsafe:
        logger.warning(unsafe)
    todo = _work(rt, user, flush, part)
    if not todo and not plot:
        summary = summarise({}, {}, time.monotonic() - started, began)
        logger.info("nothing to do")
        return Completed(message="nothing to do", data=summary)
    by_user: dict[str, Any] = {}
    users = sorted(todo.items())
    step = rt.settings.user_threads  # users at once: memory grows with it
    groups = [users[i : i + step] for i in range(0, len(users), step)]
    with EmbedAhead(rt, enabled=rt.settings.embed_ahead) as ahead:
        for i, group in enumerate(groups):
            ahead.wait()  # its writes land before the index upkeep
            _keep_indexes(rt, logger)  # the users before these appended episodes and facts
            futures = {uid: consolidate_user_task.submit(memory, uid, s, flush) for uid, s in group}
            ahead.start(groups[i + 1] if i + 1 < len(groups) else [])
            by_user |= {uid: f.result() for uid, f in futures.items()}
    usage = {k: v - usage_before.get(k, 0) for k, v in rt.provider.usage.as_dict().items()}
    summary = summarise(by_user, usage, time.monotonic() - started, began)
    summary["embedded_ahead"] = ahead.embedded
    stages = rt.stages.since(stages_before)
    stages[Stage.LLM.value] = round(_llm_wait(rt) - wait_before, 3)
    summary["stages"] = stages
    summary["estimated_cost_usd"] = estimated_cost_usd(
        rt.provider.name,
        rt.provider.model,
        usage.get("input_tokens", 0),
        usage.get("output_tokens", 0),
    )
    summary["llm"] = _llm_report(rt, llm_before, usage)
    _record_usage(rt, users_before, began)
    _log_run(logger, summary)
    markdown = consolidate_markdown(summary) + _pictures(rt, sorted(by_user), plot)
    publish_markdown("consolidate-report", markdown, "Consolidation run")
    return summary


# the tables a consolidation writes; raw's indexes are the ingest's and maintain's
WRITTEN = (
    "turn_vectors", "episodes", "facts", "fact_history", "reflections",
    "segmenter_state", "reflection_marks",
)  # fmt: skip


def _keep_indexes(rt: Runtime, logger: Any) -> None:
    """Merges look their keys up instead of joining whole tables; between
    groups of users, so no user's write races the index commit. An index is
    a speed-up: failing to make one never fails the run."""
    try:
        rt.store.keep_scalar_indexes(WRITTEN)
    except Exception as e:
        logger.warning("could not bring the tables' indexes up to date: %s", e)


def _llm_state(rt: Runtime) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    """The provider's per-stage counts and untrusted answers so far (a test's
    stand-in provider may keep none)."""
    usage = rt.provider.usage
    stages = usage.stages_dict() if hasattr(usage, "stages_dict") else {}
    return stages, dict(getattr(usage, "untrusted", {}))


def _users_usage(rt: Runtime) -> dict[str, dict[str, float]]:
    usage = rt.provider.usage
    return usage.users_dict() if hasattr(usage, "users_dict") else {}


def _record_usage(rt: Runtime, before: dict[str, dict[str, float]], began: datetime) -> None:
    """Each user's share of this run's model use, in the ledger (`episodic
    usage`, the memory browser); bookkeeping never fails the run."""
    from prefect.runtime import flow_run

    from episodic.llm.accounting import stage_report
    from episodic.models import RunUsage
    from storage.ledger import COUNTS, Ledger

    name, model = rt.provider.name, rt.provider.model
    per_user = stage_report(before, _users_usage(rt), name, model)
    run = str(flow_run.name or began.isoformat())
    rows = [
        RunUsage(
            user_id=uid,
            run=run,
            at=began,
            provider=name,
            model=model,
            **{k: int(r[k] or 0) for k in COUNTS},
            wait_s=float(r["wait_s"] or 0.0),
            cost_usd=None if r["cost_usd"] is None else float(r["cost_usd"]),
        )
        for uid, r in per_user.items()
    ]
    try:
        Ledger(rt.store).record(rows)
    except Exception as e:
        get_run_logger().warning("could not record the run's model use: %s", e)


def _llm_report(
    rt: Runtime, before: tuple[dict[str, dict[str, float]], dict[str, int]], usage: dict[str, Any]
) -> dict[str, Any]:
    """Every token of the run: per stage (digest, extraction, merge, reflection,
    segmentation_judge) calls, cache hits, tokens, fallbacks, wait and cost."""
    from episodic.llm.accounting import stage_report
    from episodic.llm.prices import PRICES_AS_OF, price_of

    stages, untrusted = _llm_state(rt)
    name, model = rt.provider.name, rt.provider.model
    price = price_of(name, model)
    by_stage = stage_report(before[0], stages, name, model)
    return {
        "provider": name,
        "model": model,
        "calls": usage.get("calls", 0),
        "cache_hits": usage.get("cached", 0),
        "fallbacks": usage.get("fallbacks", 0),
        "failures": usage.get("failures", 0),
        "input_tokens": usage.get("input_tokens", 0),
        "output_tokens": usage.get("output_tokens", 0),
        "wait_s": round(sum(float(r["wait_s"] or 0) for r in by_stage.values()), 3),
        "by_stage": by_stage,
        "untrusted": {
            k: n - before[1].get(k, 0) for k, n in untrusted.items() if n - before[1].get(k, 0)
        },
        "price_per_million": None if price is None else {"input": price[0], "output": price[1]},
        "prices_as_of": PRICES_AS_OF,
    }


def _log_run(logger: Any, summary: dict[str, Any]) -> None:
    """What happened, in the run's log (the Prefect UI shows it beside the tasks)."""
    reasons = ", ".join(f"{n} {r}" for r, n in sorted(summary["by_reason"].items())) or "none"
    logger.info(
        "read %d turns of %d users (%d embedded ahead); closed %d episodes (%s); "
        "%d turns still open",
        summary["turns_processed"], len(summary["users"]), summary["embedded_ahead"],
        summary["episodes_closed"], reasons, summary["open_turns"],
    )  # fmt: skip
    ev = summary["fact_events"]
    logger.info(
        "facts: %d added, %d updated, %d deleted, %d unchanged; %d reflections written",
        ev.get("ADD", 0), ev.get("UPDATE", 0), ev.get("DELETE", 0), ev.get("NOOP", 0),
        summary.get("reflections", 0),
    )  # fmt: skip
    llm = summary["llm"]
    cost = summary.get("estimated_cost_usd")
    logger.info(
        "model %s/%s: %d calls, %d cache hits, %d fallbacks, %d/%d tokens in/out, "
        "%.1f s waiting, cost %s (prices of %s)",
        llm["provider"], llm["model"], llm["calls"], llm["cache_hits"], llm["fallbacks"],
        llm["input_tokens"], llm["output_tokens"], llm["wait_s"],
        "unknown (no published price)" if cost is None else f"${cost:.4f}", llm["prices_as_of"],
    )  # fmt: skip
    for stage, row in llm["by_stage"].items():
        logger.info(
            "  %s: %d calls, %d cache hits, %d fallbacks, %d/%d tokens, %.1f s",
            stage, row["calls"], row["cache_hits"], row["fallbacks"],
            row["input_tokens"], row["output_tokens"], row["wait_s"],
        )  # fmt: skip
    if llm["untrusted"]:
        logger.warning("answers not trusted (answered offline): %s", llm["untrusted"])


def _llm_wait(rt: Runtime) -> float:
    """Seconds the provider has spent answering (a test's stand-in may not count)."""
    return float(getattr(rt.provider.usage, "wait_s", 0.0))


def _pictures(rt: Runtime, users: list[str], redraw: bool) -> str:
    """Markdown naming each user's latest timeline picture; never fails the run."""
    from episodic.service.plot_path import latest_plot_path

    lines: list[str] = []
    for uid in users:
        path = latest_plot_path(rt.settings.home, uid)
        if redraw:
            try:
                from episodic.service.timeline import plot_latest

                path = plot_latest(rt, uid)
            except Exception as e:
                get_run_logger().warning(  # the kind only: its text may hold the user's id
                    "timeline picture for %s failed: %s", user_tag(uid), type(e).__name__
                )
        if path.exists():
            lines.append(f"- {user_tag(uid)}: `{path}`")
    if not lines:
        return "\n\nTimeline pictures: none yet (`episodic plot --user ID` draws one).\n"
    return "\n\n## Timeline pictures\n\n" + "\n".join(lines) + "\n"


def summarise(
    by_user: dict[str, Any], usage: dict[str, Any], seconds: float, began: datetime
) -> dict[str, Any]:
    by_reason: Counter[str] = Counter()
    hist: Counter[int] = Counter()
    sources: Counter[str] = Counter()
    events: Counter[str] = Counter()
    turns = 0
    closed = 0
    lag_turns = 0
    oldest: str | None = None
    reflections = 0
    for res in by_user.values():
        for p in res["polls"]:
            turns += p["turns_read"]
            closed += len(p["episodes"])
            by_reason.update(p["by_reason"])
            lag_turns += p["open_turns"]
            if p["oldest_unprocessed"] and (oldest is None or p["oldest_unprocessed"] < oldest):
                oldest = p["oldest_unprocessed"]
        for s in res["salience"]:
            hist.update({int(k): v for k, v in s["histogram"].items()})
            sources.update(s["sources"])
        events.update(res["facts"]["events"])
        if res.get("reflection"):
            reflections += res["reflection"].get("written", 0)
    return {
        "turns_processed": turns,
        "episodes_closed": closed,
        "by_reason": dict(by_reason),
        "salience_histogram": {str(k): hist[k] for k in sorted(hist)},
        "salience_sources": dict(sources),
        "fact_events": dict(events),
        "reflections": reflections,
        "open_turns": lag_turns,
        "embedded_ahead": 0,  # turns embedded while earlier users consolidated
        "oldest_turn_processed": oldest,
        "users": sorted(by_user),
        "llm_calls": usage.get("calls", 0),
        "tokens": {"input": usage.get("input_tokens", 0), "output": usage.get("output_tokens", 0)},
        "stages": dict.fromkeys((s.value for s in Stage), 0.0),
        "estimated_cost_usd": 0.0,  # nothing asked; a run that asked sets it
        "llm": {"calls": 0, "by_stage": {}, "untrusted": {}},  # likewise
        "seconds": round(seconds, 3),
        "started_at": began.isoformat(),
    }
