"""Regenerate the ablation table of docs/segmentation.md in one command:

    python -m episodic.bench.segment_docs --data ../shared/data [--cache DIR]
        [--limit-superdialseg N]

Runs `run_segment_eval` (the harness behind `episodic eval segment --json`) on
SuperDialseg validation, TIAGE train, TIAGE dev and DialSeg711, and writes the
table between the `<!-- ablations:start -->` and `<!-- ablations:end -->`
markers, each column labelled in-sample or out-of-sample.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from episodic.bench.segment_eval import RULE_AS_FILED, run_segment_eval
from episodic.embed import make_embedder
from episodic.segment.config import DEFAULTS

DOC = Path(__file__).resolve().parents[2] / "docs" / "segmentation.md"
SETS = (
    (
        "superdialseg",
        "superdialseg/superseg_validation.jsonl",
        "SuperDialseg val (in-sample: fitted)",
    ),
    ("tiage", "tiage/anno_train.json", "TIAGE train (in-sample: fitted)"),
    ("tiage", "tiage/anno_dev.json", "TIAGE dev (in-sample: fitted)"),
    ("dialseg711", "dialseg711/dialseg_711.json", "DialSeg711 (out-of-sample, zero-shot)"),
)
ROWS = (
    ("stream_alone", "stream-adaptive score alone (no rule)"),
    ("fitted_adaptive", "fitted 4 semantic features, stream-adaptive"),
    ("fitted_sem4", "fitted 4 semantic features, fixed threshold"),
    ("combiner_v1_design", "combiner v1 design (35 features, fixed), refitted"),
    ("with_question_features", "every feature incl. question marks"),
    ("seed_dual_criteria", "ADR-0051 dual rule (P(cp) ≥ .65 or surprisal z ≥ 1.5)"),
    (
        "semantic_rule",
        f"semantic rule alone (threshold {DEFAULTS.semantic_threshold:g}, decay "
        f"{DEFAULTS.semantic_decay:g}: chosen on SuperDialseg + TIAGE)",
    ),
    (
        "semantic_rule_as_filed",
        f"semantic rule as issue 27 found it ({RULE_AS_FILED['semantic_threshold']:g}, "
        f"{RULE_AS_FILED['semantic_decay']:g}: hand-set on DialSeg711 + TIAGE)",
    ),
)


def table(results: list[dict[str, Any]]) -> str:
    head = "| method | " + " | ".join(label for _, _, label in SETS) + " |"
    lines = [head, "|---" * (len(SETS) + 1) + "|"]
    shipped = [f"{r['pk']:.3f} / {r['windowdiff']:.3f} / {r['f1']:.3f}" for r in results]
    lines.append(
        "| **shipped: `stream` (adaptive score + semantic rule)** | " + " | ".join(shipped) + " |"
    )
    for key, label in ROWS:
        cells = []
        for r in results:
            a = r["ablations"][key]
            cells.append(f"{a['pk']:.3f} / {a['windowdiff']:.3f} / {a['f1']:.3f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for key in ("no_boundary", "texttiling_offline"):
        cells = []
        for r in results:
            b = r["baselines"][key]
            cells.append(f"{b['pk']:.3f} / {b['windowdiff']:.3f} / {b['f1']:.3f}")
        lines.append(f"| baseline: {key.replace('_', ' ')} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--cache", default=None)
    ap.add_argument("--embedder", default="minilm")
    ap.add_argument("--json", action="store_true", help="print the raw results too")
    args = ap.parse_args()
    emb = make_embedder(args.embedder)
    results = [
        run_segment_eval(ds, str(Path(args.data) / rel), emb, cache_dir=args.cache)
        for ds, rel, _ in SETS
    ]
    text = DOC.read_text(encoding="utf-8")
    start, end = "<!-- ablations:start -->", "<!-- ablations:end -->"
    i, j = text.index(start) + len(start), text.index(end)
    DOC.write_text(text[:i] + "\n" + table(results) + "\n" + text[j:], encoding="utf-8")
    if args.json:
        print(
            json.dumps(
                [
                    {k: r[k] for k in ("dataset", "pk", "windowdiff", "f1", "ablations")}
                    for r in results
                ],
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
