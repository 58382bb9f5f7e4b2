"""Operator commands (status, plot, serve). Registered on the main app."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the operator commands to `app`."""
    return None
