"""The main job on the embedded default: ingest the bundled sample, consolidate
it, and show what memory now holds, every step one call of the memory service."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from episodic.adapters.cli.output import clip
from episodic.samples import DEMO_TRANSCRIPT
from episodic.service.memory import Memory

USER = "demo"
QUERY = "where does the user live"


def run_demo(console: Console, memory: Memory) -> dict[str, Any]:
    """The demo on `memory` (a memory with a consolidation runner); the
    consolidation summary."""
    rt = memory.rt
    if not console.is_terminal:
        console.width = max(console.width, 110)  # a log file has room for whole rows
    console.rule("[bold]episodic demo")
    console.print(
        f"store: {rt.store.uri}\nembedder: {rt.embedder.name}, LLM: {rt.provider.name}",
        markup=False,
    )
    rep = memory.ingest(DEMO_TRANSCRIPT, "jsonl")
    console.print(
        f"\n[bold]1. ingest[/bold] {DEMO_TRANSCRIPT.name}: accepted {rep.accepted}, duplicates "
        f"{rep.duplicates} (a rerun adds nothing), rejected {rep.rejected}"
    )
    # the sample is a finished replay: flush closes its trailing episode too
    summary = memory.consolidate(USER, flush=True)
    rt.store.ensure_indexes()
    console.print(
        f"\n[bold]2. consolidate[/bold]: {summary['turns_processed']} new turns, "
        f"{summary['episodes_closed']} episodes closed "
        f"({', '.join(f'{k} {v}' for k, v in summary['by_reason'].items()) or 'none new'})"
    )
    t = Table(title="3. episodes (why each was cut, how salient)")
    for col, w in (("stream", 12), ("turns", 5), ("started", 11), ("cut by", 14), ("sal", 3)):
        t.add_column(col, no_wrap=True, min_width=w)
    t.add_column("summary", no_wrap=True, overflow="ellipsis", max_width=46)
    for e in memory.episodes(USER):
        t.add_row(
            escape(e.stream_id),
            f"{e.first_seq}-{e.last_seq}",
            f"{e.started_at:%m-%d %H:%M}",
            e.reason,
            str(e.salience or "-"),
            escape(e.summary[:60]),
        )
    console.print(t)
    ft = Table(title="4. facts (superseded and deleted rows are kept)")
    for col in ("status", "valid from", "valid to"):
        ft.add_column(col, no_wrap=True)
    ft.add_column("text", overflow="fold")
    for f in memory.facts(USER, include_inactive=True):
        ft.add_row(
            f.status,
            f"{f.valid_from:%Y-%m-%d}",
            f"{f.valid_to:%Y-%m-%d}" if f.valid_to else "",
            escape(f.text),
        )
    console.print(ft)
    hits = memory.search(USER, QUERY, k=3)
    memory.close()  # the recalls of the search written now
    st = Table(title=f"5. search '{QUERY}' (score = relevance + recency and importance, weighted)")
    for col, w in (("score", 5), ("kind", 10), ("rel", 4), ("rec", 4), ("imp", 4)):
        st.add_column(col, no_wrap=True, min_width=w)
    st.add_column("text", no_wrap=True, overflow="ellipsis", max_width=50)
    for h in hits:
        st.add_row(
            f"{h.score:.2f}",
            h.kind,
            f"{h.relevance:.2f}",
            f"{h.recency:.2f}",
            f"{h.importance:.2f}",
            escape(clip(h.text, 70)),
        )
    console.print(st)
    console.print(
        "next: `episodic search QUERY --user demo`, `episodic facts --user demo --all`, "
        "`episodic status`"
    )
    return summary
