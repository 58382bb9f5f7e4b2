"""Readable run names: consolidate-<user>-<time>."""

from __future__ import annotations

import re
from datetime import UTC, datetime


def run_name(flow: str, user: str | None) -> str:
    who = re.sub(r"[^A-Za-z0-9_.-]+", "_", user or "all")[:40]
    return f"{flow}-{who}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"


def from_params(flow: str):  # type: ignore[no-untyped-def]
    def make() -> str:
        from prefect.runtime import flow_run

        params = flow_run.parameters or {}
        return run_name(flow, params.get("user"))

    return make
