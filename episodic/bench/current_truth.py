"""current-truth@1: on each knowledge-update case (`current_truth_cases`), two
conversations ten days apart go through the real write path (`Memory.add`,
then `consolidate` with the offline provider: segmentation, facts with their
supersession, reflection when due) and the shipped search answers the
question; the case passes when the first hit holds the current value and not
the superseded one. Scored in-sample (the cases were written for this issue,
before the ranking that is judged on them)."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from episodic.bench.current_truth_cases import CASES, FIRST_PERSON, UpdateCase

T0 = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)
GAP = timedelta(days=10)


def _turns(conv: Any, start: datetime, stream: str) -> list[dict[str, Any]]:
    return [
        {
            "role": role,
            "text": text,
            "ts": (start + timedelta(minutes=2 * i)).isoformat(),
            "stream_id": stream,
        }
        for i, (role, text) in enumerate(conv)
    ]


def _top_text(hits: Any) -> str:
    return str(hits[0].text) if hits else ""


def _brief(hits: Any) -> list[tuple[str, float, str]]:
    return [(h.kind, round(h.score, 3), h.text[:80]) for h in hits]


def run_case(memory: Any, case: UpdateCase, now: datetime | None = None) -> dict[str, Any]:
    user = f"ct-{case.name}"
    memory.add(user, _turns(case.first, T0, "s1"), stream_id="s1")
    memory.consolidate(user, flush=True)
    memory.add(user, _turns(case.second, T0 + GAP, "s2"), stream_id="s2")
    memory.consolidate(user, flush=True)
    hits = memory.search(user, case.question, k=5, record=False, now=now)
    top = _top_text(hits)
    out = {
        "case": case.name,
        "ok": _current(case, top),
        "top_kind": hits[0].kind if hits else None,
        "top_text_rank": hits[0].text_rank if hits else 0,
        "top": top,
        "hits": _brief(hits),
    }
    asked = FIRST_PERSON.get(case.name)
    if asked is not None:  # as the user asks it of their agent
        mine = memory.search(user, asked, k=5, record=False, now=now)
        out["first_person"] = {
            "question": asked,
            "ok": _current(case, _top_text(mine)),
            "hits": _brief(mine),
        }
    return out


def _current(case: UpdateCase, top: str) -> bool:
    return case.new.lower() in top.lower() and case.old.lower() not in top.lower()


def run_current_truth(
    *,
    embedder: str = "minilm",
    workdir: str | Path | None = None,
    now: datetime | None = None,
    names: Sequence[str] | None = None,
) -> dict[str, Any]:
    """current-truth@1 over the cases (in-sample), with each case's top hit."""
    from episodic.adapters.embedded import Memory
    from episodic.config import Settings
    from episodic.embed import make_embedder

    started = time.monotonic()
    home = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="episodic-ct-"))
    try:
        settings = Settings.model_validate(
            {"home": home, "db_uri": str(home / "lancedb"), "embedder": embedder, "llm": "offline"}
        )
        memory = Memory(settings, embedder=make_embedder(embedder))
        chosen = [c for c in CASES if names is None or c.name in names]
        cases = [run_case(memory, c, now) for c in chosen]
        memory.close()
    finally:
        if workdir is None:
            shutil.rmtree(home, ignore_errors=True)
    ok = sum(c["ok"] for c in cases)
    mine = [c["first_person"]["ok"] for c in cases if "first_person" in c]
    return {
        "current_truth_at_1": round(ok / len(cases), 3),
        "passed": ok,
        "n_cases": len(cases),
        "sample": "in-sample (cases written for issue 31 before the ranking)",
        "first_person_at_1": round(sum(mine) / len(mine), 3) if mine else None,
        "first_person_passed": sum(mine),
        "first_person_cases": len(mine),
        "cases": cases,
        "seconds": round(time.monotonic() - started, 1),
    }
