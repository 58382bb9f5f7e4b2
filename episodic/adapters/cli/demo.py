"""The main job on the embedded default: ingest the bundled sample, consolidate
it, and show what memory now holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from rich.console import Console
from rich.table import Table

import episodic

SAMPLE = Path(episodic.__file__).parent / "samples" / "demo_agent.jsonl"
USER = "demo"


def run_demo(console: Console) -> dict[str, object]:
    from flows.consolidate import consolidate
    from episodic.service.ingest import ingest_file
    from episodic.service.runtime import get_runtime

    rt = get_runtime()
    if not console.is_terminal:
        console.width = max(console.width, 110)  # a log file has room for whole rows
    console.rule("[bold]episodic demo")
    console.print(f"store: {rt.store.uri}\nembedder: {rt.embedder.name}, LLM: {rt.provider.name}")
    rep = ingest_file(rt.raw, SAMPLE, "jsonl")
    rt.store.ensure_indexes()
    console.print(
        f"\n[bold]1. ingest[/bold] {SAMPLE.name}: accepted {rep.accepted}, duplicates "
        f"{rep.duplicates} (a rerun adds nothing), rejected {rep.rejected}"
    )
    # the sample is a finished replay: flush closes its trailing episode too
    summary = cast(dict[str, Any], consolidate(user=USER, flush=True))  # the result, not a State
    rt.store.ensure_indexes()
    console.print(
        f"\n[bold]2. consolidate[/bold]: {summary['turns_processed']} new turns, "
        f"{summary['episodes_closed']} episodes closed "
        f"({', '.join(f'{k} {v}' for k, v in summary['by_reason'].items()) or 'none new'})"
    )
    eps = rt.episodes.list(USER)
    t = Table(title="3. episodes (why each was cut, how salient)")
    for col, w in (("stream", 12), ("turns", 5), ("started", 11), ("cut by", 14), ("sal", 3)):
        t.add_column(col, no_wrap=True, min_width=w)
    t.add_column("summary", no_wrap=True, overflow="ellipsis", max_width=46)
    for e in eps:
        t.add_row(
            e.stream_id,
            f"{e.first_seq}-{e.last_seq}",
            f"{e.started_at:%m-%d %H:%M}",
            e.boundary_reason,
            str(e.salience or "-"),
            e.summary[:60],
        )
    console.print(t)
    facts = rt.facts.list(USER, include_inactive=True)
    ft = Table(title="4. facts (superseded and deleted rows are kept)")
    for col in ("status", "valid from", "valid to"):
        ft.add_column(col, no_wrap=True)
    ft.add_column("text", overflow="fold")
    for f in facts:
        ft.add_row(
            f.status,
            f"{f.valid_from:%Y-%m-%d}",
            f"{f.valid_to:%Y-%m-%d}" if f.valid_to else "",
            f.text,
        )
    console.print(ft)
    from episodic.service.search import SearchOptions, search

    hits = search(rt, USER, "where does the user live", SearchOptions(k=3))
    st = Table(
        title="5. search 'where does the user live' (score = recency + importance + similarity)"
    )
    for col, w in (("score", 5), ("kind", 7), ("rec", 4), ("imp", 4), ("sim", 4)):
        st.add_column(col, no_wrap=True, min_width=w)
    st.add_column("text", no_wrap=True, overflow="ellipsis", max_width=50)
    for h in hits:
        st.add_row(
            f"{h.score:.2f}",
            h.kind,
            f"{h.recency:.2f}",
            f"{h.importance:.2f}",
            f"{h.similarity:.2f}",
            h.text[:70],
        )
    console.print(st)
    console.print(
        "next: `episodic search QUERY --user demo`, `episodic facts --user demo --all`, "
        "`episodic status`"
    )
    return summary
