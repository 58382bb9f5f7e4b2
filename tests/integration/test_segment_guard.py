"""Guards: a fixed slice of each data set through `episodic eval segment --json`;
each fails when Pk rises more than .01 above the value recorded in
tests/fixtures/segment_guard.json (written from the same command when the
combiner was fitted). Skipped, with the reason, when ../shared/data is absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from episodic.adapters.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
RECORDED = json.loads((ROOT / "tests/fixtures/segment_guard.json").read_text())
SLICES = {
    "tiage_dev": ("tiage", "tiage/anno_dev.json"),
    "superdialseg": ("superdialseg", "superdialseg/superseg_validation.jsonl"),
    "dialseg711": ("dialseg711", "dialseg711/dialseg_711.json"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLICES))
def test_pk_on_a_fixed_slice_stays_within_01_of_the_record(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    dataset, rel = SLICES[name]
    path = DATA / rel
    if not path.exists():
        pytest.skip(f"{path} not found: the public data lives in ../shared/data")
    rec = RECORDED[name]
    cache = tmp_path_factory.getbasetemp() / "segment-guard-cache"
    res = CliRunner().invoke(
        app,
        ["eval", "segment", "--dataset", dataset, "--path", str(path),
         "--limit", str(rec["limit"]), "--cache", str(cache), "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["n_dialogues"] == rec["limit"]
    for key in ("pk", "windowdiff", "f1", "baselines", "ablations"):
        assert key in out
    assert out["pk"] <= rec["pk"] + 0.01, (name, out["pk"], rec["pk"])
