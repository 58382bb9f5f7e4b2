"""The pure core imports none of prefect, lancedb or the LLM SDKs (DESIGN.md)."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import importlib, pkgutil, sys
import episodic
for m in pkgutil.walk_packages(episodic.__path__, "episodic."):
    importlib.import_module(m.name)
banned = ("prefect", "lancedb", "instructor", "anthropic", "openai")
bad = sorted(n for n in banned if n in sys.modules)
print(",".join(bad))
"""


def test_episodic_imports_no_framework_or_sdk() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, check=True, timeout=300
    )
    assert out.stdout.strip() == "", f"episodic/ pulled in: {out.stdout.strip()}"
