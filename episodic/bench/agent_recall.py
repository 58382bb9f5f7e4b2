"""Recall on an agent's stream: twenty questions about the demo transcript
(`agent_questions.json`), each with the turns that answer it. They were
written blind on 2026-12-07 by a helper agent shown only the transcript,
never the search's code or its results (after the two ranking changes of
that day that they were first used to check, so out-of-sample for them).

The transcript goes through the real write path (ingest, the consolidate
flow with the offline provider) and the shipped search answers each
question; scored by where the first evidence turn ranks among the turn hits
(MRR over `k` hits, hit@1, hit@5), overall and by what the question is
about: the user, the work, or a party named ("what did the assistant
propose ...")."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from episodic.samples import DEMO_TRANSCRIPT

QUESTIONS = Path(__file__).with_name("agent_questions.json")
USER = "demo"


def _answer_place(hits: list[Any], want: set[tuple[str, str]]) -> int | None:
    """1-based place of the first turn hit that is an evidence turn, or None."""
    turns = [h for h in hits if h.kind == "turn"]
    for place, h in enumerate(turns, start=1):
        own = [t for t in h.turns if t.turn_id == h.item_id]
        if any((t.stream_id, t.text) in want for t in own):
            return place
    return None


def run_agent_recall(
    *, embedder: str | None = None, workdir: str | Path | None = None, k: int = 10
) -> dict[str, Any]:
    """The questions on the demo transcript; `embedder` None: the default."""
    from episodic.adapters.embedded import Memory
    from episodic.config import Settings

    started = time.monotonic()
    questions = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    chosen = embedder or Settings.model_fields["embedder"].default
    home = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="episodic-agent-"))
    try:
        settings = Settings.model_validate({"home": home, "embedder": chosen, "llm": "offline"})
        with Memory(settings) as memory:
            memory.ingest(DEMO_TRANSCRIPT, "jsonl")
            memory.consolidate(flush=True)
            rows = []
            for q in questions:
                want = {(e["stream_id"], e["text"]) for e in q["evidence"]}
                hits = memory.search(USER, q["q"], k=k, record=False)
                rows.append({"q": q["q"], "about": q["about"], "first": _answer_place(hits, want)})
    finally:
        if workdir is None:
            shutil.rmtree(home, ignore_errors=True)
    return {
        **_scores(rows),
        "by_about": {a: _scores([r for r in rows if r["about"] == a]) for a in _abouts(rows)},
        "n_questions": len(rows),
        "k": k,
        "embedder": chosen,
        "sample": "out-of-sample for the 2026-12-07 ranking (written blind, after it)",
        "questions": rows,
        "seconds": round(time.monotonic() - started, 1),
    }


def _abouts(rows: list[dict[str, Any]]) -> list[str]:
    return sorted({str(r["about"]) for r in rows})


def _scores(rows: list[dict[str, Any]]) -> dict[str, float]:
    firsts = [r["first"] for r in rows]
    n = len(firsts) or 1
    return {
        "mrr": round(sum(1 / f for f in firsts if f) / n, 3),
        "hit_at_1": round(sum(1 for f in firsts if f == 1) / n, 3),
        "hit_at_5": round(sum(1 for f in firsts if f and f <= 5) / n, 3),
    }
