"""`episodic status` is run often and must start quickly: it reads the store,
so it loads LanceDB, but not the libraries of verbs it does not run (polars,
Lance's own dataset module, the model providers' retry stack, the doctor, the
ingest formats, the transfer code, the segmenter: `episodic.config` takes only
the detector's settings). Checked by modules loaded, not by time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

PROBE = """
import contextlib, gc, io, json, sys
from episodic.adapters.cli.main import main
sys.argv = ["episodic", "status", "--json"]
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main()
    except SystemExit as e:
        assert not e.code, e.code
heavy = ("polars", "lance", "tenacity", "episodic.service.doctor",
         "episodic.ingest.chat", "storage.transfer", "episodic.segment.detector")
print(json.dumps({"rows": json.loads(out.getvalue()),
                  "loaded": sorted(m for m in heavy if m in sys.modules),
                  "store": "lancedb" in sys.modules, "collector": gc.isenabled()}))
"""


def _probe(code: str, tmp_path: Path) -> dict[str, Any]:
    """What `code` prints last, as JSON, run in a fresh interpreter."""
    env = {"EPISODIC_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        env=env,
        cwd=tmp_path,
    )
    got: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def test_status_loads_the_store_and_nothing_it_does_not_use(tmp_path: Path) -> None:
    got = _probe(PROBE, tmp_path)
    assert got["rows"] == [] and got["store"] is True
    assert got["loaded"] == []
    # paused while the service imported (cli/context.py), on again after
    assert got["collector"] is True


DRAWING = """
import json, sys
import episodic.service.forget, flows.consolidate, episodic.service.plot_path
print(json.dumps({"matplotlib": "matplotlib" in sys.modules,
                  "timeline": "episodic.service.timeline" in sys.modules}))
"""


def test_forget_and_consolidate_name_pictures_without_drawing_them(tmp_path: Path) -> None:
    """Forget erases the picture and a consolidation names it; neither draws,
    so neither loads matplotlib (half a second) until a picture is drawn."""
    assert _probe(DRAWING, tmp_path) == {"matplotlib": False, "timeline": False}


SEGMENT = """
import json, sys
import episodic.config
before = "episodic.segment.detector" in sys.modules
from episodic.segment import Detector, DetectorConfig, SegTurn, segment_stream
import episodic.segment as package
try:
    package.no_such_name
    missing = "found"
except AttributeError:
    missing = "AttributeError"
print(json.dumps({"before": before, "detector": Detector.__module__,
                  "config": DetectorConfig is episodic.config.DetectorConfig,
                  "turn": SegTurn.__name__, "missing": missing,
                  "episodes": len(segment_stream([]))}))
"""


def test_the_segment_package_loads_the_detector_on_first_use(tmp_path: Path) -> None:
    assert _probe(SEGMENT, tmp_path) == {
        "before": False,
        "detector": "episodic.segment.detector",
        "config": True,
        "turn": "SegTurn",
        "missing": "AttributeError",
        "episodes": 0,
    }
