"""The HTTP client is a thin face: importing it loads no database and no model."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import episodic.adapters.client
print(json.dumps(sorted(m for m in ("lancedb", "storage", "torch", "prefect", "polars")
                        if m in sys.modules)))
"""


def test_importing_the_client_loads_no_store_model_or_flow() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
