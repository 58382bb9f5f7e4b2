"""The ingest flow: one transcript into the raw log, as a deployable run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from episodic.service.memory import Memory
from tasks.names import from_params


@flow(name="ingest", flow_run_name=from_params("ingest"), log_prints=True)
def ingest(
    path: str, format: str = "auto", user: str | None = None, memory: Memory | None = None
) -> dict[str, Any]:
    """Append a transcript file to the immutable raw log (idempotent)."""
    memory = memory or Memory()
    return memory.ingest(Path(path), format, user_id=user).as_dict()
