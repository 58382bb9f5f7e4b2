"""The pure core (episodic/ but its service, adapters and bench) imports none of
prefect, lancedb or the LLM SDKs (DESIGN.md)."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import importlib, pathlib, sys
import episodic
root = pathlib.Path(episodic.__file__).parent
outer = ("service", "adapters", "bench")
for path in sorted(root.rglob("*.py")):
    parts = path.relative_to(root).with_suffix("").parts
    if parts[0] not in outer:
        name = ".".join(("episodic",) + parts[: -1 if parts[-1] == "__init__" else None])
        importlib.import_module(name)
banned = ("prefect", "lancedb", "instructor", "anthropic", "openai")
bad = sorted(n for n in banned if n in sys.modules)
print(",".join(bad))
"""


def test_episodic_imports_no_framework_or_sdk() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, check=True, timeout=300
    )
    assert out.stdout.strip() == "", f"episodic/ pulled in: {out.stdout.strip()}"
