"""The ingest flow: one transcript into the raw log, as a deployable run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from tasks.ingest import ingest_file
from tasks.names import from_params
from tasks.runtime import get_runtime


@flow(name="ingest", flow_run_name=from_params("ingest"), log_prints=True)
def ingest(path: str, format: str = "auto", user: str | None = None) -> dict[str, Any]:
    """Append a transcript file to the immutable raw log (idempotent)."""
    rt = get_runtime()
    report = ingest_file(
        rt.raw, Path(path), format, user_id=user, max_turn_chars=rt.settings.max_turn_chars
    )
    rt.store.ensure_indexes()
    return report.as_dict()
