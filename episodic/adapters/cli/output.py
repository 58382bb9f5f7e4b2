"""How commands print: `--json` writes JSON on stdout for scripts and tests
(a view's `.as_json()`, the same JSON the HTTP API returns), otherwise a rich
table for a person. Every cell and title is printed as text, never read as
rich markup: `#[derive(Parser)]` stays whole (`esc` does the same for a value
printed inside a line that has markup of its own)."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from episodic.service.ingest import IngestReport
    from episodic.service.views import View

console = Console()
err = Console(stderr=True)


def clip(text: str, n: int) -> str:
    """`text` in at most `n` characters, cut at a word, with an ellipsis."""
    return textwrap.shorten(text, n, placeholder=" …")


def esc(value: object) -> str:
    """A user-supplied value as text inside a line printed with markup."""
    return escape(str(value))


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str, ensure_ascii=False) + "\n")


def views_json(views: Iterable[View]) -> list[dict[str, Any]]:
    return [v.as_json() for v in views]


def show(
    as_json: bool,
    data: Any,
    title: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[str]],
) -> None:
    """With `--json`, `data` as JSON; else a table of `rows` (read only then:
    pass a generator) under `columns`, every cell and the title as plain text."""
    if as_json:
        print_json(data)
        return
    cells = [list(row) for row in rows]
    if cells and not _fits(columns, cells, console.width):
        _records(title, columns, cells)
        return
    # rich wraps a title to its table's width: a long one goes on a line of its own
    natural = sum(max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns))
    inline = len(title) <= natural + 3 * len(columns) + 1
    if not inline:
        console.print(title, style="bold", markup=False)
    t = Table(title=escape(title) if inline else None)
    for col in columns:
        t.add_column(col)
    for row in cells:
        t.add_row(*(escape(cell) for cell in row))
    console.print(t)


WRAP_MIN = 24  # a column of long text still reads when wrapped to this width


def _fits(columns: Sequence[str], cells: list[list[str]], width: int) -> bool:
    """Whether a table leaves every short column whole and every long one at
    least WRAP_MIN wide; cut to "codi…" and "Com…" it says nothing."""
    need = 0
    for i, col in enumerate(columns):
        natural = max(len(col), *(len(r[i]) for r in cells))
        need += natural if natural <= WRAP_MIN else max(len(col), WRAP_MIN)
    return need + 3 * len(columns) + 1 <= width


def _records(title: str, columns: Sequence[str], cells: list[list[str]]) -> None:
    """Each row as a block of `column  value` lines: for a terminal too narrow
    for the table."""
    console.print(title, style="bold", markup=False)
    for n, row in enumerate(cells):
        if n:
            console.print()
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column()
        for col, cell in zip(columns, row, strict=True):
            grid.add_row(escape(col), escape(cell))
        console.print(grid)


def show_ingest(report: IngestReport, as_json: bool, title: str, to: Console = console) -> None:
    """An ingest's (or a capture's) counts and its first rejected lines."""
    if as_json:
        print_json(report.as_dict())
        return
    to.print(
        f"[bold]{esc(title)}[/bold] ({esc(report.format)}): accepted "
        f"[green]{report.accepted}[/green], duplicates {report.duplicates}, rejected "
        f"[red]{report.rejected}[/red], compaction summaries kept out {report.skipped_derived}"
    )
    for reason in report.first_reasons:
        to.print(f"  [red]rejected[/red] {esc(reason)}")
    if report.rejected:
        to.print("  (kept whole in the rejected_input table)")


def recall_row(name: str, m: dict[str, Any], ks: Sequence[int]) -> tuple[str, ...]:
    """One method's row; the hybrid baselines and the shipped search are
    measured at the budgets only, so their other cells read '-'."""

    def cell(v: Any, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    at_k = m.get("recall_at_k", {})
    return (
        name,
        *(cell(at_k.get(str(kk)), ".3f") for kk in ks),
        cell(m.get("recall_at_budget"), ".3f"),
        cell(m.get("recall_at_token_budget"), ".3f"),
        cell(m.get("mean_turns_per_unit"), ".1f"),
    )
