"""Should ONNX int8 be the default embedder? Issue 19's rule, measured in one run.

int8 becomes the default if, against MiniLM fp32, the shipped detector's Pk is
no worse by more than .005 on each dev set (SuperDialseg validation, TIAGE
dev, DialSeg711) and LoCoMo dev5 evidence recall of the shipped search
(within 50 turns) is no worse by more than .005; an improvement never counts
against it. The combiner was fitted on fp32 features (its PCA space), so int8
vectors reach it slightly off that space: this measures what that costs.

Both embedders run through the same code in one process, one after the
other. Accuracy does not depend on the machine's load; throughput does, so it
comes with the load average it was taken at (bench.embed_backends.throughput,
one-time export or load timed apart). SuperDialseg validation is in-sample for
the combiner (fitted on it, with fp32); TIAGE dev is a selection split;
DialSeg711 is zero-shot. No test split is read.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from episodic.bench.corpus import data_dir, machine, report, target
from episodic.bench.embed_backends import throughput
from episodic.embed import Embedder

FP32, INT8 = "minilm", "onnx-int8"
TOLERANCE = 0.005
SETS = (  # cheapest first
    ("tiage", "tiage/anno_dev.json", "TIAGE dev: selection split, never fitted"),
    ("dialseg711", "dialseg711/dialseg_711.json", "zero-shot, never fitted"),
    ("superdialseg", "superdialseg/superseg_validation.jsonl", "in-sample (combiner fitted on it)"),
)
LOCOMO = "locomo/locomo_dev5.json"
LOCOMO_CRITERION = "shipped"  # the README's headline: what `episodic search` returns


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _progress(msg: str) -> None:
    """A line on stderr per finished figure: a long run interrupted still tells."""
    sys.stderr.write(f"[bench embed-default] {msg}\n")
    sys.stderr.flush()


def segment_figures(
    emb: Embedder, dataset: str, path: Path, limit: int | None, cache_dir: Path | None = None
) -> dict[str, Any]:
    """The shipped detector's Pk on one dev set (no baselines, no ablations),
    and the turns per second of embedding its dialogues (None: read from the
    harness's .npz cache in `cache_dir`, same key rule as `eval segment`)."""
    from episodic.bench.datasets import load_dataset
    from episodic.bench.segment_eval import evaluate_vectors, load_vectors_timed
    from episodic.segment.detector import DetectorConfig

    dialogues = load_dataset(dataset, path)[:limit]
    vectors, ms = load_vectors_timed(dataset, dialogues, emb, cache_dir)
    res = evaluate_vectors(dialogues, vectors, DetectorConfig(), baselines=False)
    return {
        "pk": res["pk"],
        "windowdiff": res["windowdiff"],
        "f1": res["f1"],
        "n_dialogues": res["n_dialogues"],
        "n_turns": res["n_turns"],
        "embed_turns_per_s": round(1000.0 / ms, 1) if ms else None,
        "vectors": "embedded in this run" if ms is not None else f"read from {cache_dir}",
        "load_avg_1m_after": _load(),
    }


def locomo_figures(name: str, path: Path, conversations: int | None) -> dict[str, Any]:
    from episodic.bench.locomo_eval import run_locomo_eval

    res = run_locomo_eval(path, embedder=name, max_conversations=conversations)
    return {
        "n_questions": res["n_questions"],
        "recall_at_budget": {m: v["recall_at_budget"] for m, v in sorted(res["methods"].items())},
        "seconds": res["seconds"],
        "load_avg_1m_after": _load(),
    }


def throughputs(names: tuple[str, str], turns: int) -> list[dict[str, Any]]:
    """Both embedders back to back, so that they see about the same load."""
    from episodic.embed import make_embedder

    rows = []
    for name in names:
        emb = make_embedder(name)
        load = _load()
        turns_per_s, setup_s = throughput(emb, turns)
        rows.append(
            {
                "embedder": name,
                "model": emb.name,
                "turns_per_s": round(turns_per_s, 1),
                "setup_s": round(setup_s, 1),
                "load_avg_1m_at_throughput": load,
            }
        )
        _progress(f"{name}: {turns_per_s:.1f} turns/s (setup {setup_s:.1f} s, load {load})")
    return rows


def segments(
    names: tuple[str, str], root: Path, limit: int | None, cache_dir: Path | None = None
) -> list[dict[str, Any]]:
    """Each set for both embedders in turn: an interrupted run still compares
    the sets it finished."""
    from episodic.embed import make_embedder

    embs = [make_embedder(n) for n in names]
    out: list[dict[str, Any]] = [{} for _ in names]
    for dataset, rel, _ in SETS:
        for name, emb, figs in zip(names, embs, out, strict=True):
            figs[dataset] = segment_figures(emb, dataset, root / rel, limit, cache_dir)
            _progress(f"{name}: {dataset} Pk {figs[dataset]['pk']:.4f}")
    return out


def locomos(names: tuple[str, str], root: Path, conversations: int | None) -> list[dict[str, Any]]:
    out = []
    for name in names:
        out.append(locomo_figures(name, root / LOCOMO, conversations))
        _progress(f"{name}: LoCoMo {out[-1]['recall_at_budget']}")
    return out


def _row(figure: str, key: str, a: float | None, b: float | None) -> dict[str, Any]:
    delta = None if a is None or b is None else round(b - a, 4)
    return {"figure": figure, "fp32": a, "int8": b, "delta": delta, "criterion": key}


def compare(fp32: dict[str, Any], int8: dict[str, Any]) -> dict[str, Any]:
    """One row per figure (int8 - fp32), the criteria's targets on the loss
    (how much worse int8 is), and the decision with what fails and by how much.
    A figure an interrupted run did not reach fails as "not measured"."""
    rows: list[dict[str, Any]] = []
    targets: dict[str, dict[str, Any]] = {}
    for dataset, _, label in SETS:
        a, b = ((r.get("segment") or {}).get(dataset, {}).get("pk") for r in (fp32, int8))
        key = f"pk_loss_{dataset}"
        # Pk: lower is better
        targets[key] = target(None if a is None or b is None else b - a, "<=", TOLERANCE)
        rows.append(
            _row(
                f"Pk {dataset} ({label})",
                key,
                None if a is None else round(a, 4),
                None if b is None else round(b, 4),
            )
        )
    recall_a = (fp32.get("locomo") or {}).get("recall_at_budget", {})
    recall_b = (int8.get("locomo") or {}).get("recall_at_budget", {})
    for method in sorted(set(recall_a) | set(recall_b) | {LOCOMO_CRITERION}):
        a, b = recall_a.get(method), recall_b.get(method)
        key = "locomo_recall_loss" if method == LOCOMO_CRITERION else ""
        if key:  # recall: higher is better
            targets[key] = target(None if a is None or b is None else a - b, "<=", TOLERANCE)
        rows.append(_row(f"LoCoMo recall within 50 turns, {method}", key, a, b))
    failing = {
        k: "not measured"
        if t["value"] is None
        else f"int8 worse by {t['value']:.4f}, misses by {t['value'] - TOLERANCE:.4f}"
        for k, t in targets.items()
        if not t["met"]
    }
    return {"results": rows, "targets": targets, "failing": failing, "int8_default": not failing}


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def check_data(root: Path) -> None:
    missing = [rel for _, rel, _ in SETS if not (root / rel).exists()]
    missing += [] if (root / LOCOMO).exists() else [LOCOMO]
    if missing:
        raise SystemExit(f"embed-default needs the public data under {root}: missing {missing}")


def result(
    embedders: tuple[str, str],
    rates: list[dict[str, Any]],
    segment: list[dict[str, Any]],
    locomo: list[dict[str, Any]],
    start: dict[str, Any],
    **scale: Any,
) -> dict[str, Any]:
    """The JSON of the benchmark from its three parts (one entry per embedder each)."""
    runs = [
        {**r, "segment": s, "locomo": lo} for r, s, lo in zip(rates, segment, locomo, strict=True)
    ]
    fp32, int8 = runs
    res: dict[str, Any] = {
        "benchmark": "embed-default",
        "rule": (
            "int8 becomes the default if Pk is no worse than fp32 by more than "
            f"{TOLERANCE} on each dev set and LoCoMo recall (shipped search, within 50 "
            f"turns) no worse by more than {TOLERANCE}; deltas are int8 - fp32"
        ),
        "baseline": embedders[0],
        "candidate": embedders[1],
        **compare(fp32, int8),
        "throughput": {
            "fp32_turns_per_s": fp32.get("turns_per_s"),
            "int8_turns_per_s": int8.get("turns_per_s"),
            "speedup": _ratio(int8.get("turns_per_s"), fp32.get("turns_per_s")),
            "fp32_load_avg_1m": fp32.get("load_avg_1m_at_throughput"),
            "int8_load_avg_1m": int8.get("load_avg_1m_at_throughput"),
            "fp32_setup_s": fp32.get("setup_s"),
            "int8_setup_s": int8.get("setup_s"),
        },
        "per_embedder": runs,
        **scale,
        "machine": start,
        "load_avg_1m_end": _load(),
    }
    report("embed-default", res)
    return res


def bench_embed_default(
    turns: int = 5_000,
    limit: int | None = None,
    conversations: int | None = None,
    embedders: tuple[str, str] = (FP32, INT8),
    cache_dir: Path | None = None,
) -> dict[str, Any]:
    """`turns` (throughput), `limit` (dialogues per set) and `conversations`
    (LoCoMo) scale a smoke run down; None measures everything. `embedders` is
    (baseline, candidate); `cache_dir` keeps (or supplies) the sets' vectors."""
    root = data_dir()
    check_data(root)
    start = machine()
    rates = throughputs(embedders, turns)
    segment = segments(embedders, root, limit, cache_dir)
    locomo = locomos(embedders, root, conversations)
    return result(
        embedders,
        rates,
        segment,
        locomo,
        start,
        throughput_turns=turns,
        limit_dialogues=limit,
        locomo_conversations=conversations,
    )
