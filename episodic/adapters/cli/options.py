"""What several commands share: terminal progress for a person."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


def show_progress(as_json: bool) -> bool:
    """A progress bar only for a person: stdout a terminal and not --json."""
    return not as_json and sys.stdout.isatty()


@contextmanager
def spinner(label: str, enabled: bool) -> Iterator[None]:
    """A transient spinner with the elapsed time on stderr while a long
    command runs (the flows report no fraction done)."""
    if not enabled:
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        bar.add_task(label, total=None)
        yield
