"""Markdown and table artifacts a person reads in the Prefect UI."""

from __future__ import annotations

from typing import Any

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from episodic.models import user_tag


def _bar(n: int, most: int, width: int = 30) -> str:
    return "█" * max(1 if n else 0, round(width * n / most)) if most else ""


def consolidate_markdown(summary: dict[str, Any], plot_path: str | None = None) -> str:
    lines = [
        "# Consolidation run",
        "",
        f"- turns processed: **{summary['turns_processed']}**",
        f"- episodes closed: **{summary['episodes_closed']}**",
        f"- users (tags): {', '.join(user_tag(u) for u in summary['users']) or '—'}",
        f"- open turns left (lag): {summary['open_turns']}",
        f"- oldest turn processed (event time): {summary['oldest_turn_processed'] or '—'}",
        f"- LLM calls: {summary['llm_calls']}, tokens in/out: "
        f"{summary['tokens']['input']}/{summary['tokens']['output']}",
        f"- reflections written: {summary.get('reflections', 0)}",
        f"- wall time: {summary['seconds']} s",
        "",
        "## Episodes closed by reason",
        "",
        "| reason | episodes |",
        "|---|---:|",
    ]
    for reason, n in sorted(summary["by_reason"].items(), key=lambda kv: -kv[1]):
        lines.append(f"| {reason} | {n} |")
    hist = {int(k): v for k, v in summary["salience_histogram"].items()}
    most = max(hist.values(), default=0)
    lines += ["", "## Salience histogram", "", "| salience | episodes | |", "|---:|---:|---|"]
    for score in range(1, 11):
        n = hist.get(score, 0)
        lines.append(f"| {score} | {n} | {_bar(n, most)} |")
    lines += _stage_lines(summary)
    lines += _llm_lines(summary)
    lines += ["", "## Salience sources", ""]
    for src, n in sorted(summary["salience_sources"].items()):
        lines.append(f"- {src}: {n}")
    lines += ["", "## Fact decisions", ""]
    for ev, n in sorted(summary["fact_events"].items()):
        lines.append(f"- {ev}: {n}")
    if plot_path:
        lines += ["", f"Timeline picture: `{plot_path}`"]
    return "\n".join(lines)


def _stage_lines(summary: dict[str, Any]) -> list[str]:
    """Where the time went; `llm_wait` is a part of the steps that ask the model."""
    stages: dict[str, float] = summary.get("stages") or {}
    if not stages:
        return []
    most = max(stages.values(), default=0.0)
    cost = summary.get("estimated_cost_usd")
    lines = [
        "",
        "## Time per stage",
        "",
        "Summed over users' threads; `llm_wait` lies within the steps that ask the model.",
        "",
        "| stage | seconds | |",
        "|---|---:|---|",
    ]
    for stage, secs in stages.items():
        lines.append(f"| {stage} | {secs:.3f} | {_bar(round(1000 * secs), round(1000 * most))} |")
    lines += [
        "",
        f"- estimated cost: {'no price table for this model' if cost is None else f'${cost:.4f}'}",
    ]
    return lines


def _llm_lines(summary: dict[str, Any]) -> list[str]:
    """Every token of the run, per stage, with its cost from the price table."""
    llm: dict[str, Any] = summary.get("llm") or {}
    by_stage: dict[str, dict[str, Any]] = llm.get("by_stage") or {}
    if not by_stage:
        return []
    lines = [
        "",
        "## Model calls and tokens per stage",
        "",
        f"Provider {llm.get('provider')}/{llm.get('model')}; prices of "
        f"{llm.get('prices_as_of')} (cost — when the model has no published price).",
        "",
        "| stage | calls | cache hits | fallbacks | tokens in | tokens out | wait s | cost $ |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for stage, r in by_stage.items():
        cost = "—" if r.get("cost_usd") is None else f"{r['cost_usd']:.4f}"
        lines.append(
            f"| {stage} | {r['calls']} | {r['cache_hits']} | {r['fallbacks']} | "
            f"{r['input_tokens']} | {r['output_tokens']} | {r['wait_s']:.1f} | {cost} |"
        )
    if llm.get("untrusted"):
        lines += ["", "Answers not trusted (answered offline instead):", ""]
        lines += [f"- {k}: {n}" for k, n in sorted(llm["untrusted"].items())]
    return lines


def publish_markdown(key: str, markdown: str, description: str) -> None:
    create_markdown_artifact(key=key, markdown=markdown, description=description)


def publish_table(key: str, rows: list[dict[str, Any]], description: str) -> None:
    create_table_artifact(key=key, table=rows, description=description)
