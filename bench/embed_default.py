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

from bench.corpus import data_dir, machine, report, target
from bench.embed_backends import throughput
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


def segment_figures(emb: Embedder, dataset: str, path: Path, limit: int | None) -> dict[str, Any]:
    """The shipped detector's Pk on one dev set (no baselines, no ablations),
    and the turns per second of embedding its dialogues."""
    from bench.datasets import load_dataset
    from bench.segment_eval import embed_dialogues, evaluate_vectors
    from episodic.segment.detector import DetectorConfig

    dialogues = load_dataset(dataset, path)[:limit]
    vectors, ms = embed_dialogues(dialogues, emb)
    res = evaluate_vectors(dialogues, vectors, DetectorConfig(), baselines=False)
    return {
        "pk": res["pk"],
        "windowdiff": res["windowdiff"],
        "f1": res["f1"],
        "n_dialogues": res["n_dialogues"],
        "n_turns": res["n_turns"],
        "embed_turns_per_s": round(1000.0 / ms, 1) if ms > 0 else None,
        "load_avg_1m_after": _load(),
    }


def locomo_figures(name: str, path: Path, conversations: int | None) -> dict[str, Any]:
    from bench.locomo_eval import run_locomo_eval

    res = run_locomo_eval(path, embedder=name, max_conversations=conversations)
    return {
        "n_questions": res["n_questions"],
        "recall_at_budget": {m: v["recall_at_budget"] for m, v in sorted(res["methods"].items())},
        "seconds": res["seconds"],
        "load_avg_1m_after": _load(),
    }


def measure(
    names: tuple[str, str], root: Path, turns: int, limit: int | None, conversations: int | None
) -> list[dict[str, Any]]:
    """Both embedders, figure by figure (throughput back to back, then each set
    for both), so that an interrupted run still compares what it finished."""
    from episodic.embed import make_embedder

    runs: list[dict[str, Any]] = []
    embs = [make_embedder(n) for n in names]
    for name, emb in zip(names, embs, strict=True):
        load = _load()
        turns_per_s, setup_s = throughput(emb, turns)
        runs.append(
            {
                "embedder": name,
                "model": emb.name,
                "turns_per_s": round(turns_per_s, 1),
                "setup_s": round(setup_s, 1),
                "load_avg_1m_at_throughput": load,
                "segment": {},
            }
        )
        _progress(f"{name}: {turns_per_s:.1f} turns/s (setup {setup_s:.1f} s, load {load})")
    for dataset, rel, _ in SETS:
        for run, emb in zip(runs, embs, strict=True):
            fig = segment_figures(emb, dataset, root / rel, limit)
            run["segment"][dataset] = fig
            _progress(f"{run['embedder']}: {dataset} Pk {fig['pk']:.4f}")
    for run in runs:
        run["locomo"] = locomo_figures(run["embedder"], root / LOCOMO, conversations)
        _progress(f"{run['embedder']}: LoCoMo {run['locomo']['recall_at_budget']}")
    return runs


def compare(fp32: dict[str, Any], int8: dict[str, Any]) -> dict[str, Any]:
    """One row per figure (int8 - fp32), the criteria's targets on the loss
    (how much worse int8 is), and the decision with what fails and by how much."""
    rows: list[dict[str, Any]] = []
    targets: dict[str, dict[str, Any]] = {}
    for dataset, _, label in SETS:
        a, b = fp32["segment"][dataset]["pk"], int8["segment"][dataset]["pk"]
        key = f"pk_loss_{dataset}"
        targets[key] = target(b - a, "<=", TOLERANCE)  # Pk: lower is better
        rows.append(
            {
                "figure": f"Pk {dataset} ({label})",
                "fp32": round(a, 4),
                "int8": round(b, 4),
                "delta": round(b - a, 4),
                "criterion": key,
            }
        )
    for method, a in fp32["locomo"]["recall_at_budget"].items():
        b = int8["locomo"]["recall_at_budget"].get(method)
        if b is None:
            continue
        key = "locomo_recall_loss" if method == LOCOMO_CRITERION else ""
        if key:
            targets[key] = target(a - b, "<=", TOLERANCE)  # recall: higher is better
        rows.append(
            {
                "figure": f"LoCoMo recall within 50 turns, {method}",
                "fp32": a,
                "int8": b,
                "delta": round(b - a, 4),
                "criterion": key,
            }
        )
    failing = {
        k: f"int8 worse by {t['value']:.4f}, misses by {t['value'] - TOLERANCE:.4f}"
        for k, t in targets.items()
        if not t["met"]
    }
    return {"results": rows, "targets": targets, "failing": failing, "int8_default": not failing}


def bench_embed_default(
    turns: int = 5_000,
    limit: int | None = None,
    conversations: int | None = None,
    embedders: tuple[str, str] = (FP32, INT8),
) -> dict[str, Any]:
    """`limit` (dialogues per set) and `conversations` (LoCoMo) scale a smoke
    run down; None measures everything. `embedders` is (baseline, candidate)."""
    root = data_dir()
    missing = [rel for _, rel, _ in SETS if not (root / rel).exists()]
    missing += [] if (root / LOCOMO).exists() else [LOCOMO]
    if missing:
        raise SystemExit(f"embed-default needs the public data under {root}: missing {missing}")
    start = machine()
    fp32, int8 = measure(embedders, root, turns, limit, conversations)
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
            "turns": turns,
            "fp32_turns_per_s": fp32["turns_per_s"],
            "int8_turns_per_s": int8["turns_per_s"],
            "speedup": round(int8["turns_per_s"] / max(fp32["turns_per_s"], 1e-9), 2),
            "fp32_load_avg_1m": fp32["load_avg_1m_at_throughput"],
            "int8_load_avg_1m": int8["load_avg_1m_at_throughput"],
            "fp32_setup_s": fp32["setup_s"],
            "int8_setup_s": int8["setup_s"],
        },
        "per_embedder": [fp32, int8],
        "limit_dialogues": limit,
        "locomo_conversations": conversations,
        "machine": start,
        "load_avg_1m_end": _load(),
    }
    report("embed-default", res)
    return res
