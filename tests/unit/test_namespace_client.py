"""LanceDB's REST namespace client is deferred (storage/namespace_client.py):
the store works without it, and the first use of the package loads it whole."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
import storage
from storage import namespace_client as nc
import lancedb
db = lancedb.connect(sys.argv[1])
table = db.create_table("t", data=[{"x": 1}, {"x": 2}])
rows = table.to_arrow().num_rows
before = nc.loaded()
import lance_namespace_urllib3_client as client
api = client.ApiClient.__name__  # an attribute of the package itself: its __init__ runs
try:
    client.no_such_name
    missing = "found"
except AttributeError:
    missing = "AttributeError"
print(json.dumps({"rows": rows, "before": before, "after": nc.loaded(), "api": api,
                  "missing": missing}))
"""


def test_the_store_works_with_the_client_deferred_and_loads_it_on_first_use(
    tmp_path: Path,
) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "db")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {
        "rows": 2,
        "before": False,
        "after": True,
        "api": "ApiClient",
        "missing": "AttributeError",
    }
