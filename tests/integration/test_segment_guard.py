"""Guards on fixed slices of the public data (../shared/data), with the real MiniLM
embedder; each fails when Pk rises more than .01 above the value recorded in
tests/fixtures/segment_guard.json. Skipped, with the reason, when the data is absent.

- `test_pk_on_a_fixed_slice...`: the shipped detector through `episodic eval
  segment --json` (in-sample on SuperDialseg and TIAGE, which it was fitted on;
  out-of-sample on DialSeg711).
- `test_out_of_corpus_pk...`: leave-one-corpus-out on the slices, as
  `episodic train segment` does on the full sets: the shipped design fitted on
  the slices of the other fitting corpora only, scored on the one left out
  (DialSeg711 is never fitted on). Each figure is out-of-sample for fitting.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
# the LOCO corpora on slices: (slice above, which corpus it stands for)
LOCO = {"superdialseg": "superdialseg", "tiage": "tiage_dev", "dialseg711": "dialseg711"}


def _need(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} not found: the public data lives in ../shared/data")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp() / "segment-guard-cache"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLICES))
def test_pk_on_a_fixed_slice_stays_within_01_of_the_record(name: str, cache: Path) -> None:
    dataset, rel = SLICES[name]
    path = DATA / rel
    _need(path)
    rec = RECORDED[name]
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


@pytest.fixture(scope="module")
def loco_on_slices(cache: Path) -> dict[str, Any]:
    from episodic.bench import segment_train as st
    from episodic.bench.datasets import load_dataset
    from episodic.bench.segment_eval import load_vectors
    from episodic.embed import MiniLMEmbedder

    for _, rel in SLICES.values():
        _need(DATA / rel)
    embedder = MiniLMEmbedder()
    dials, vecs = {}, {}
    for corpus, slice_name in LOCO.items():
        dataset, rel = SLICES[slice_name]
        ds = load_dataset(dataset, DATA / rel)[: RECORDED[slice_name]["limit"]]
        dials[corpus] = ds
        vecs[corpus] = load_vectors(dataset, ds, embedder, cache)  # shared with the CLI's
    design = st.MODELS[st.SHIPPED]
    return st.loco(dials, vecs, {st.SHIPPED: design})


@pytest.mark.slow
@pytest.mark.parametrize("corpus", sorted(LOCO))
def test_out_of_corpus_pk_stays_within_01_of_the_record(
    corpus: str, loco_on_slices: dict[str, Any]
) -> None:
    from episodic.bench.segment_train import SHIPPED

    rec = RECORDED["loco"][corpus]
    got = loco_on_slices[corpus]
    assert "dialseg711" not in got["fitted_on"]  # never fitted on
    assert corpus not in got["fitted_on"]
    pk = got[SHIPPED]["pk"]
    assert pk <= rec["pk"] + 0.01, (corpus, pk, rec)
