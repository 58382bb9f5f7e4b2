"""How commands print: `--json` writes JSON on stdout for scripts and tests,
otherwise a rich table for a person. Also the JSON view of an episode, which
`episodic episodes --json` and the HTTP API share."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from episodic.models import Episode

console = Console()
err = Console(stderr=True)


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str, ensure_ascii=False) + "\n")


def show(
    as_json: bool,
    data: Any,
    title: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[str]],
) -> None:
    """With `--json`, `data` as JSON; else a table of `rows` (read only then:
    pass a generator) under `columns`."""
    if as_json:
        print_json(data)
        return
    t = Table(title=title)
    for col in columns:
        t.add_column(col)
    for row in rows:
        t.add_row(*row)
    console.print(t)


def episode_view(e: Episode) -> dict[str, Any]:
    """An episode as JSON: where it sits, why it was cut, how salient it is.
    The API's response models keep the fields they declare."""
    return {
        "episode_id": e.episode_id,
        "stream_id": e.stream_id,
        "first_seq": e.first_seq,
        "last_seq": e.last_seq,
        "n_turns": e.n_turns,
        "started_at": e.started_at,
        "ended_at": e.ended_at,
        "reason": e.boundary_reason,
        "boundary_score": round(e.boundary_score, 4),
        "salience": e.salience,
        "salience_source": e.salience_source,
        "summary": e.summary,
        "parent_episode_id": e.parent_episode_id,
        "status": e.status,
        "signal_scores": e.signal_scores,
    }
