"""`episodic alerts`: Prefect automations that notify on failed runs and
lagging streams (deployments/automations.yaml; the logic: tasks/automations.py).

episodic alerts block --slack URL         a notification block (or --webhook URL)
episodic alerts apply [--block NAME]      create or update the automations by name

Both need a running Prefect server (PREFECT_API_URL): the temporary API that
a flow run starts on its own evaluates no triggers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer

from episodic.adapters.cli.guard import GuardedTyper, fail
from episodic.adapters.cli.output import console, print_json
from episodic.errors import ExitCode

alerts_app = GuardedTyper(no_args_is_help=True, help="Notifications on failed runs and lag.")
T = TypeVar("T")


def _on_server(call: Callable[[], T]) -> T:
    """`call` against the configured Prefect server; one line when there is none."""
    import httpx
    from prefect.exceptions import PrefectHTTPStatusError
    from prefect.settings import get_current_settings

    if not get_current_settings().api.url:
        fail(
            ExitCode.USAGE,
            "alerts live on a Prefect server: start one (`prefect server start`) "
            "and set PREFECT_API_URL (e.g. http://127.0.0.1:4200/api)",
        )
    try:
        return call()
    except (httpx.HTTPError, PrefectHTTPStatusError, OSError) as e:
        fail(ExitCode.USAGE, f"the Prefect server refused or did not answer: {e}")


@alerts_app.command("apply")
def apply_cmd(
    block: str | None = typer.Option(
        None, "--block", help="notification block: NAME or TYPE/NAME (default: the file's)"
    ),
    path: Path | None = typer.Option(None, "--file", help="default: deployments/automations.yaml"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Create or update the automations of deployments/automations.yaml.

    By name: applying twice leaves one of each. Notifications go to the
    named block."""
    from prefect.client.orchestration import get_client

    from tasks import automations

    data = automations.spec(path) if path else automations.spec()
    name = block or str(data.get("notification_block") or "")
    if not name:
        fail(ExitCode.USAGE, "--block: no notification block named here or in the file")

    def run() -> dict[str, Any]:
        with get_client(sync_client=True) as client:
            block_id, full = automations.find_block(client, name)
            applied = automations.apply(client, automations.build(data, block_id))
        return {"block": {"name": full, "id": str(block_id)}, "automations": applied}

    res = _on_server(run)
    if as_json:
        print_json(res)
        return
    for a in res["automations"]:
        console.print(f"{a['action']:8} {a['name']}  ({a['id']})")
    console.print(f"notifications go to {res['block']['name']}")


@alerts_app.command("block")
def block_cmd(
    slack: str | None = typer.Option(None, "--slack", help="a Slack incoming-webhook URL"),
    webhook: str | None = typer.Option(
        None, "--webhook", help='any URL taking a JSON POST {"subject", "body"}'
    ),
    name: str = typer.Option("episodic-alerts", "--name", help="the block's name"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Save the notification block the alerts go to (Slack or a webhook).

    It overwrites a block of the same name. For e-mail, make a Sendgrid Email
    block in Prefect's UI and `episodic alerts apply --block sendgrid-email/NAME`."""
    from tasks import automations

    if (slack is None) == (webhook is None):
        fail(ExitCode.USAGE, "give one of --slack URL or --webhook URL")
    if slack is not None:
        res = _on_server(lambda: automations.save_block(name, "slack", slack))
    else:
        res = _on_server(lambda: automations.save_block(name, "webhook", webhook or ""))
    if as_json:
        print_json(res)
    else:
        console.print(f"saved notification block {res['type']}/{res['name']}")


def register(app: typer.Typer) -> None:
    app.add_typer(alerts_app, name="alerts")
