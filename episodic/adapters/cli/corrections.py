"""A person's corrections of a fact from the command line, as the browser and
`POST /v1/facts/{id}/...` make them: `invalidate` (no longer believed, kept,
reversible), `restore` (believed again) and `reword` (what it says was
recorded wrong). Each prints the fact as it now stands; history keeps the old."""

from __future__ import annotations

from collections.abc import Callable

import typer

from episodic.adapters.cli.context import for_user
from episodic.adapters.cli.guard import fail
from episodic.adapters.cli.output import show
from episodic.errors import ExitCode
from episodic.service.views import FactView

USER = typer.Option(..., "--user", help="whose fact")
AS_JSON = typer.Option(False, "--json")


def _print(fact: FactView, as_json: bool, title: str) -> None:
    show(
        as_json,
        fact.as_json(),
        title,
        ("fact", "status", "valid from", "supersedes", "text"),
        [
            (
                fact.fact_id,
                fact.status,
                f"{fact.valid_from:%Y-%m-%d}",
                fact.supersedes or "-",
                fact.text,
            )
        ],
    )


def _correct(fix: Callable[[], FactView], as_json: bool, title: str) -> None:
    try:
        fact = fix()
    except ValueError as e:  # an empty wording, a superseded fact
        fail(ExitCode.USAGE, str(e))
    _print(fact, as_json, title)


def invalidate(fact_id: str, user: str = USER, as_json: bool = AS_JSON) -> None:
    """Stop believing a fact (a unique id prefix will do): kept, with a DELETE
    by user-correction in its history; `episodic restore` undoes it."""
    memory = for_user(user)
    _correct(lambda: memory.invalidate_fact(user, fact_id, actor="cli"), as_json, "invalidated")


def restore(fact_id: str, user: str = USER, as_json: bool = AS_JSON) -> None:
    """Believe an invalidated fact again (an ADD by user-correction)."""
    memory = for_user(user)
    _correct(lambda: memory.restore_fact(user, fact_id, actor="cli"), as_json, "restored")


def reword(fact_id: str, text: str, user: str = USER, as_json: bool = AS_JSON) -> None:
    """Fix what a fact says: a new fact with TEXT, for the same time and
    episodes, supersedes it; the old wording is never believed again and
    stays in the history (an UPDATE by user-correction)."""
    memory = for_user(user)
    _correct(lambda: memory.reword_fact(user, fact_id, text, actor="cli"), as_json, "reworded")


def register(app: typer.Typer) -> None:
    for command in (invalidate, restore, reword):
        app.command()(command)
