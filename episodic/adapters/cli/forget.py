"""`episodic forget`: erase a user, or one turn, episode or fact of theirs
(`Memory.forget`), after a confirmation; prints the receipt (per-table
counts, never content), which is also kept as an audit row."""

from __future__ import annotations

import typer

from episodic.adapters.cli.context import memory
from episodic.adapters.cli.guard import fail
from episodic.adapters.cli.output import console, esc, print_json, show
from episodic.errors import ExitCode
from episodic.service.views import forget_target

WHAT = {
    "user": "every turn, episode, fact, reflection, key, offset and cached model answer "
    "of user {user}, from every file (older table versions included)",
    "turn": "the text of turn {ident} of user {user}; its episode, the facts only it "
    "supported and the reflections citing it are derived again",
    "episode": "the turns' text of episode {ident} of user {user}; the facts only it "
    "supported and the reflections citing it go",
    "fact": "fact {ident} of user {user}, the wordings it was reworded from, and their history",
}


def forget(
    user: str = typer.Option(..., "--user", help="whose memory"),
    turn: str | None = typer.Option(
        None, "--turn", help="forget only this turn (a unique id prefix will do)"
    ),
    episode: str | None = typer.Option(
        None, "--episode", help="forget only this episode (a unique id prefix will do)"
    ),
    fact: str | None = typer.Option(
        None, "--fact", help="forget only this fact (a unique id prefix will do)"
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="do not ask for confirmation"),
    as_json: bool = typer.Option(False, "--json", help="print the receipt as JSON (no question)"),
) -> None:
    """Erase what the memory holds of a user, or of one turn, episode or fact.

    The one deliberate exception to "raw is immutable": the rows are removed
    from every table and every older table version, so no file under
    EPISODIC_HOME still holds them. Without --turn/--episode/--fact the whole
    user goes, API keys included. Forgetting again is a no-op with the same
    receipt shape."""
    try:
        if not user.strip():
            raise ValueError("the user id to forget is empty")
        asked = forget_target(turn=turn, episode=episode, fact=fact)
    except ValueError as e:
        fail(ExitCode.USAGE, str(e))
    kind, ident = asked[0] if asked else ("user", "")
    if not (yes or as_json):
        what = WHAT[kind].format(user=esc(user), ident=esc(ident))
        console.print(f"[bold red]This erases[/bold red] {what}. It cannot be undone.")
        if not typer.confirm("Forget?", default=False):
            console.print("nothing forgotten")
            raise typer.Exit(1)
    receipt = memory().forget(user, turn=turn, episode=episode, fact=fact, actor="cli")
    if as_json:
        print_json(receipt.as_json())
        return
    show(
        False,
        None,
        f"forgot {receipt.kind}: {receipt.total} rows gone (audit {receipt.audit_id})",
        ["table", "rows"],
        ((name, str(n)) for name, n in sorted(receipt.counts.items())),
    )


def register(app: typer.Typer) -> None:
    app.command()(forget)
