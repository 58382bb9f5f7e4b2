"""What several commands share: flags that show as flags in `--help`, the
unknown-user check of user-scoped reads, and terminal progress."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

from episodic.adapters.cli.guard import fail
from episodic.errors import ExitCode

if TYPE_CHECKING:
    from episodic.service.runtime import Runtime


def json_option() -> Any:
    return typer.Option(False, "--json", help="print JSON on stdout (for scripts and tests)")


def require_user(rt: Runtime, user_id: str) -> None:
    """Exit 1 with one line when the user has nothing stored, rather than
    print an empty table that looks like an empty memory."""
    from storage.frames import user_exists

    if not user_exists(rt.store, user_id):
        fail(
            ExitCode.REJECTED,
            f"unknown user {user_id!r}: no turns, episodes or facts stored "
            "(`episodic status` lists every user's streams)",
        )


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
