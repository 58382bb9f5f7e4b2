"""The default-embedder rule of issue 19 (episodic/bench/embed_default.py): int8 wins
only if no Pk is worse by more than .005 and LoCoMo recall neither."""

from __future__ import annotations

from typing import Any

from episodic.bench.embed_default import compare


def _run(pk: dict[str, float], shipped: float, turn_cos: float = 0.5) -> dict[str, Any]:
    return {
        "segment": {k: {"pk": v} for k, v in pk.items()},
        "locomo": {"recall_at_budget": {"shipped": shipped, "turn_cos": turn_cos}},
    }


FP32 = _run({"tiage": 0.446, "dialseg711": 0.300, "superdialseg": 0.312}, 0.882)


def test_int8_within_tolerance_becomes_the_default() -> None:
    int8 = _run({"tiage": 0.450, "dialseg711": 0.290, "superdialseg": 0.312}, 0.878, 0.40)
    res = compare(FP32, int8)
    assert res["int8_default"] is True and res["failing"] == {}
    # an improvement (DialSeg711 -.010) and an off-criterion recall drop do not count
    rows = {r["figure"].split(" (")[0]: r for r in res["results"]}
    assert rows["Pk dialseg711"]["delta"] == -0.01
    assert rows["LoCoMo recall within 50 turns, turn_cos"]["criterion"] == ""


def test_each_failing_criterion_is_named_with_its_miss() -> None:
    int8 = _run({"tiage": 0.446, "dialseg711": 0.309, "superdialseg": 0.312}, 0.870)
    res = compare(FP32, int8)
    assert res["int8_default"] is False
    assert set(res["failing"]) == {"pk_loss_dialseg711", "locomo_recall_loss"}
    assert res["targets"]["pk_loss_dialseg711"]["value"] == 0.009
    assert "misses by 0.0040" in res["failing"]["pk_loss_dialseg711"]
    assert "misses by 0.0070" in res["failing"]["locomo_recall_loss"]


def test_a_figure_not_reached_fails_as_not_measured() -> None:
    int8 = {"segment": {"tiage": {"pk": 0.446}}}  # interrupted after one set, before LoCoMo
    res = compare(FP32, int8)
    assert res["int8_default"] is False
    assert res["failing"]["pk_loss_superdialseg"] == "not measured"
    assert res["failing"]["locomo_recall_loss"] == "not measured"
    assert "pk_loss_tiage" not in res["failing"]


def test_the_shipped_default_follows_the_stored_decision() -> None:
    """The default embedder is what the last stored embed-default run decided
    (docs/perf/embed-default.json), so that neither moves without the other."""
    import json
    from pathlib import Path

    from episodic.config import Settings

    stored = Path(__file__).resolve().parents[2] / "docs/perf/embed-default.json"
    res = json.loads(stored.read_text(encoding="utf-8"))["result"]
    assert res["failing"] == {} if res["int8_default"] else res["failing"]
    want = res["candidate"] if res["int8_default"] else res["baseline"]
    assert Settings.model_fields["embedder"].default == want
