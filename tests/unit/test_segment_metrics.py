"""Pk, WindowDiff, F1 on hand-computed cases; loaders, embedders, harness on tiny data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from episodic.bench.datasets import load_dataset
from episodic.bench.metrics import (
    boundaries_to_masses,
    boundary_counts,
    evidence_recall,
    pk,
    window_size,
    windowdiff,
)
from episodic.bench.segment_bench import bench_segment
from episodic.bench.segment_eval import run_segment_eval, texttiling
from episodic.embed import HashEmbedder, make_embedder


def test_window_size_follows_segeval() -> None:
    assert window_size([2, 2]) == 2  # round(1.0) = 1 -> at least 2
    assert window_size([6, 6]) == 3
    assert window_size([5, 5, 6]) == 3  # round(2.67)


def test_pk_and_windowdiff_by_hand() -> None:
    ref = (3, 3)  # labels 000111, k = 2 (round(1.5) = 2), windows i = 0..3
    assert pk(ref, ref) == 0.0 and windowdiff(ref, ref) == 0.0
    # no boundary: windows (0,2) (1,3) (2,4) (3,5); reference differs at i=1,2 -> 2/4
    assert pk((6,), ref) == 0.5
    assert windowdiff((6,), ref) == 0.5
    # boundary one late, 000011: hyp same/diff at (0,2)s (1,3)s (2,4)d (3,5)d
    # against ref s d d s -> disagreements at i = 1 and 3
    assert pk((4, 2), ref) == 0.5
    assert windowdiff((4, 2), ref) == 0.5
    # an extra boundary, 000122: hyp s d d d -> pk errs only at i = 3;
    # boundary counts 0 1 2 1 against 0 1 1 0 -> windowdiff errs at i = 2 and 3
    assert pk((3, 1, 2), ref) == 0.25
    assert windowdiff((3, 1, 2), ref) == 0.5


def test_metrics_refuse_mismatched_lengths() -> None:
    with pytest.raises(ValueError):
        pk((3,), (2, 2))


def test_boundary_counts_and_recall() -> None:
    c = boundary_counts((2, 2, 2), (2, 4))
    assert (c.tp, c.fp, c.fn) == (1, 1, 0)
    assert c.precision == 0.5 and c.recall == 1.0 and c.f1 == pytest.approx(2 / 3)
    assert boundaries_to_masses(6, [0, 2, 2, 9, 4]) == (2, 2, 2)
    assert evidence_recall(["a", "b"], [["a", "c"], ["d"]]) == 0.5
    with pytest.raises(ValueError):
        evidence_recall([], [["a"]])


def test_hash_embedder_is_deterministic_and_similar_for_shared_words() -> None:
    e = make_embedder("hash")
    v = e.embed(["the cat sat on the mat", "the cat sat", "quarterly revenue fell", ""])
    assert v.shape == (4, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v[:3], axis=1), 1.0) and not v[3].any()
    assert v[0] @ v[1] > 0.5 > abs(float(v[0] @ v[2]))
    assert np.array_equal(
        v,
        HashEmbedder().embed(
            ["the cat sat on the mat", "the cat sat", "quarterly revenue fell", ""]
        ),
    )
    with pytest.raises(ValueError):
        make_embedder("nope")


def write_tiny(tmp_path: Path) -> dict[str, Path]:
    topics = [
        "book a train ticket to cambridge on friday",
        "weather forecast rain tomorrow in london",
    ]
    utts = [topics[0]] * 6 + [topics[1]] * 6
    dialseg = tmp_path / "d.json"
    dialseg.write_text(
        json.dumps([{"dial_id": "a", "utterances": utts, "segments": [6, 6], "set": "x"}])
    )
    tiage = tmp_path / "tiage"
    tiage.mkdir()
    rows = [[u, "-1" if i == 0 else ("1" if i == 6 else "0")] for i, u in enumerate(utts)]
    for split in ("train", "dev"):
        (tiage / f"anno_{split}.json").write_text(json.dumps({"1": rows}))
    sup = tmp_path / "s.jsonl"
    lines = [
        f"user: {topics[0]}",
        f"agent: {topics[0]}",
        "[BOUNDARY]",
        f"user: {topics[1]}",
        f"agent: {topics[1]}",
        "[BOUNDARY]",
    ]
    sup.write_text(json.dumps({"id": "s0", "dialogue": "[NEWLINE]".join(lines)}) + "\n")
    return {"dialseg711": dialseg, "tiage": tiage, "superdialseg": sup}


def test_loaders(tmp_path: Path) -> None:
    paths = write_tiny(tmp_path)
    d = load_dataset("dialseg711", paths["dialseg711"])[0]
    assert d.masses == (6, 6) and d.roles[:2] == ("user", "assistant") and d.boundaries == {6}
    assert [x.masses for x in load_dataset("tiage", paths["tiage"])] == [(6, 6), (6, 6)]
    s = load_dataset("superdialseg", paths["superdialseg"])[0]
    assert s.masses == (2, 2) and s.roles == (
        "user",
        "assistant",
        "user",
        "assistant",
    )  # trailing boundary dropped
    with pytest.raises(ValueError):
        load_dataset("nope", paths["tiage"])


@pytest.mark.parametrize("name", ["dialseg711", "tiage", "superdialseg"])
def test_harness_reports_detector_and_baselines(tmp_path: Path, name: str) -> None:
    paths = write_tiny(tmp_path)
    r = run_segment_eval(name, str(paths[name]), HashEmbedder(), cache_dir=tmp_path / "cache")
    assert {"pk", "windowdiff", "f1", "n_dialogues", "us_per_turn", "baselines"} <= set(r)
    assert set(r["baselines"]) == {
        "semantic_shift_alone",
        "change_point_alone",
        "surprisal_alone",
        "fixed_5",
        "fixed_10",
        "fixed_20",
        "no_boundary",
        "texttiling_offline",
    }
    assert r["baselines"]["no_boundary"]["f1"] == 0.0
    if name != "superdialseg":
        assert r["pk"] == 0.0  # two word-disjoint topics: the detector finds the one boundary
    again = run_segment_eval(name, str(paths[name]), HashEmbedder(), cache_dir=tmp_path / "cache")
    assert again["pk"] == r["pk"] and again["embed_ms_per_turn"] is None  # served from the cache


def test_texttiling_finds_a_clean_shift() -> None:
    paths_vectors = np.repeat(np.eye(4, dtype=np.float32)[:2], 6, axis=0)

    class D:
        utterances = ("x",) * 12

    assert 6 in texttiling(D(), paths_vectors)  # type: ignore[arg-type]


def test_bench_reports_each_path_and_cap() -> None:
    r = bench_segment(dims=32, caps=(5, 10), n_turns=200)
    assert r["target_us"] == 60 and [x["max_run_length"] for x in r["results"]] == [5, 10, 5, 10]
    assert [x["path"] for x in r["results"]] == ["default"] * 2 + ["semantic_rule"] * 2
    assert all(x["median_us"] > 0 and x["p95_us"] >= x["median_us"] for x in r["results"])
    assert len(r["load_average"]) == 3  # printed beside the figure: the machine is shared


@pytest.mark.slow
def test_minilm_embedder_loads_the_packaged_model() -> None:
    from episodic.embed import MiniLMEmbedder

    v = MiniLMEmbedder(batch_size=2).embed(
        ["a train to Cambridge", "a train to London", "", "rain tomorrow"]
    )
    assert v.shape == (4, 384) and not v[2].any()
    assert v[0] @ v[1] > v[0] @ v[3]
