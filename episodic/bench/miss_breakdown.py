"""Where the shipped search misses evidence (LoCoMo layout: LoCoMo, REALTALK):
evidence recall within `budget` turns per question, broken down by question
category, by the distance between a question's evidence messages (turns from
the first to the last) and by the mean length of its evidence messages.

The store is the LoCoMo harness's (`run_locomo_eval(workdir=...)`; ingest and
segmentation are idempotent, so a workdir already built is reused). Every
figure is in-sample on the dev sets (they choose between designs)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from episodic.bench.locomo_eval import _load_conversation, normalise_evidence
from episodic.bench.locomo_hybrid import take_turns
from episodic.config import Settings
from episodic.embed import make_embedder
from episodic.service.memory import Memory

DISTANCE_BINS = ((0, 0, "one message"), (1, 5, "1-5"), (6, 20, "6-20"), (21, 100, "21-100"))
LENGTH_BINS = ((0, 29, "<30 chars"), (30, 79, "30-79"), (80, 10**9, ">=80"))


def _bin(x: int, bins: Sequence[tuple[int, int, str]], last: str) -> str:
    return next((name for lo, hi, name in bins if lo <= x <= hi), last)


def _table(rows: Sequence[tuple[str, float]]) -> dict[str, dict[str, float]]:
    out: dict[str, list[float]] = {}
    for key, r in rows:
        out.setdefault(key, []).append(r)
    return {
        k: {"n": len(v), "recall": round(sum(v) / len(v), 3)}
        for k, v in sorted(out.items(), key=lambda kv: kv[0])
    }


def run_breakdown(
    path: str | Path,
    *,
    budget: int = 50,
    embedder: str = "minilm",
    workdir: str | Path | None = None,
) -> dict[str, Any]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    samples = data if isinstance(data, list) else [data]
    home = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="episodic-miss-"))
    rows: list[dict[str, Any]] = []
    try:
        settings = Settings.model_validate(
            {"home": home, "db_uri": str(home / "lancedb"), "embedder": embedder, "llm": "offline"}
        )
        memory = Memory(settings, embedder=make_embedder(embedder))
        for i, sample in enumerate(samples):
            conv = _load_conversation(memory, sample, home, i)
            row_of_dia = {d: j for j, d in enumerate(conv.dia_ids)}
            row_of_turn = {t: j for j, t in enumerate(conv.turn_ids)}
            for qa in sample.get("qa", []):
                evidence, _ = normalise_evidence(qa.get("evidence") or [])
                kept = [e for e in evidence if e in row_of_dia]
                if not kept:
                    continue
                hits = memory.search(
                    conv.sample_id,
                    str(qa.get("question", "")),
                    k=10 * budget,
                    max_turns=2 * budget,
                    record=False,
                    now=(conv.end or None) and conv.end + timedelta(hours=1),
                )
                units = [
                    [row_of_turn[t.turn_id] for t in h.turns if t.turn_id in row_of_turn]
                    for h in hits
                ]
                got = take_turns(units, budget)
                ev_rows = [row_of_dia[e] for e in kept]
                found = sum(1 for r in ev_rows if r in got)
                texts = [conv.texts[r].split(": ", 1)[-1] for r in ev_rows]
                rows.append(
                    {
                        "sample": conv.sample_id,
                        "category": int(qa.get("category", 0)),
                        "recall": found / len(ev_rows),
                        "n_evidence": len(ev_rows),
                        "distance": max(ev_rows) - min(ev_rows),
                        "mean_chars": round(sum(len(t) for t in texts) / len(texts)),
                    }
                )
        memory.close()
    finally:
        if workdir is None:
            shutil.rmtree(home, ignore_errors=True)
    n = len(rows)
    return {
        "sample": "in-sample (dev set)",
        "n_questions": n,
        "budget_turns": budget,
        "recall": round(sum(r["recall"] for r in rows) / max(1, n), 3),
        "by_category": _table([(str(r["category"]), r["recall"]) for r in rows]),
        "by_n_evidence": _table(
            [
                (str(min(r["n_evidence"], 4)) + ("+" if r["n_evidence"] >= 4 else ""), r["recall"])
                for r in rows
            ]
        ),
        "by_distance": _table(
            [(_bin(r["distance"], DISTANCE_BINS, ">100"), r["recall"]) for r in rows]
        ),
        "by_length": _table(
            [(_bin(r["mean_chars"], LENGTH_BINS, ">=80"), r["recall"]) for r in rows]
        ),
    }


if __name__ == "__main__":  # python -m episodic.bench.miss_breakdown FILE [WORKDIR]
    import sys

    res = run_breakdown(sys.argv[1], workdir=sys.argv[2] if len(sys.argv) > 2 else None)
    print(json.dumps(res, indent=1))
