"""Run the fact scenario suite (`bench.fact_cases`) through extraction and merge.

Each case runs episode by episode through `extract_facts` and `decide` with
the given provider (the offline one by default), the decisions applied to an
in-memory fact table as storage applies them (UPDATE supersedes its target
and adds the new text, DELETE supersedes, ADD adds). Merge candidates are the
top 5 active facts by vector (the embedder given) and top 5 by shared words,
as the store's hybrid search offers them.

Scored per case and in total:
- recall: expected phrases (active and superseded) found where expected;
- precision: active facts that match an expected phrase, over all active facts;
- wrong supersessions: superseded facts no expected phrase names;
- assistant facts: active facts that contain an `absent` phrase.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from episodic.bench.fact_cases import CASES, Case
from episodic.embed.hash import HashEmbedder
from episodic.facts import CandidateSet, ExistingFact, FactTurn, decide, extract_facts
from episodic.facts.normalize import words
from episodic.llm.base import LLMProvider
from episodic.llm.offline import OfflineProvider

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
K = 5


@dataclass
class CaseResult:
    name: str
    topic: str
    active: list[str]
    superseded: list[str]
    missing: list[str] = field(default_factory=list)
    wrong_superseded: list[str] = field(default_factory=list)
    assistant_facts: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    expected: int = 0
    found: int = 0


def _candidates(
    text: str, vec: np.ndarray, active: dict[str, tuple[str, np.ndarray]]
) -> list[ExistingFact]:
    ids = list(active)
    if not ids:
        return []
    mat = np.stack([active[i][1] for i in ids])
    sims = mat @ vec / (np.linalg.norm(mat, axis=1) * (np.linalg.norm(vec) or 1.0) + 1e-9)
    by_vec = [ids[j] for j in np.argsort(-sims)[:K]]
    mine = set(words(text))
    overlap = {i: len(mine & set(words(active[i][0]))) for i in ids}
    by_words = [i for i in sorted(ids, key=lambda i: -overlap[i]) if overlap[i]][:K]
    chosen = list(dict.fromkeys(by_vec + by_words))
    return [ExistingFact(i, active[i][0], active[i][1]) for i in chosen]


def run_case(case: Case, provider: LLMProvider, embedder: Any) -> CaseResult:
    active: dict[str, tuple[str, np.ndarray]] = {}
    superseded: list[str] = []
    seq = 0
    for e, episode in enumerate(case.episodes):
        now = T0 + timedelta(days=7 * e)
        turns = [
            FactTurn(f"{case.name}-{e}-{k}", role, text, now + timedelta(seconds=k))  # type: ignore[arg-type]
            for k, (role, text) in enumerate(episode)
        ]
        new = extract_facts(provider, turns, now=now)
        if not new:
            continue
        vecs = embedder.embed([f.text for f in new])
        sets = [
            CandidateSet(f, v, _candidates(f.text, v, active))
            for f, v in zip(new, vecs, strict=True)
        ]
        created: dict[int, str] = {}
        for i, d in enumerate(decide(provider, sets, now=now)):
            target = d.target_fact_id
            if target is None and d.target_index is not None:
                target = created.get(d.target_index)
            if d.event in ("UPDATE", "DELETE") and target in active:
                superseded.append(active.pop(target)[0])
            if d.event in ("ADD", "UPDATE") and d.new_text:
                seq += 1
                created[i] = f"f{seq}"
                active[f"f{seq}"] = (d.new_text, vecs[i])
    return _score(case, [t for t, _ in active.values()], superseded)


def _score(case: Case, active: list[str], superseded: list[str]) -> CaseResult:
    low_active = [a.casefold() for a in active]
    low_sup = [s.casefold() for s in superseded]
    res = CaseResult(case.name, case.topic, active, superseded)
    res.expected = len(case.active) + len(case.superseded)
    for phrase in case.active:
        if any(phrase in a for a in low_active):
            res.found += 1
        else:
            res.missing.append(f"active: {phrase}")
    for phrase in case.superseded:
        if any(phrase in s for s in low_sup):
            res.found += 1
        else:
            res.missing.append(f"superseded: {phrase}")
    res.wrong_superseded = [
        s for s, low in zip(superseded, low_sup, strict=True)
        if not any(p in low for p in case.superseded)
    ]  # fmt: skip
    res.assistant_facts = [a for a, low in zip(active, low_active, strict=True)
                           if any(p in low for p in case.absent)]  # fmt: skip
    res.unexpected = [a for a, low in zip(active, low_active, strict=True)
                      if not any(p in low for p in case.active)]  # fmt: skip
    return res


def run_by_written(
    provider: LLMProvider | None = None, cases: list[Case] | None = None
) -> dict[str, Any]:
    """The suite per `written` group: cases written before the rule that
    handles them, after it (the rules were tuned on them), held out (two
    batches)."""
    from episodic.bench.fact_cases import CASES, HELD_OUT, WRITTEN

    pool = cases if cases is not None else CASES + HELD_OUT
    out: dict[str, Any] = {}
    for group in WRITTEN:
        chosen = [c for c in pool if c.written == group]
        if chosen:
            res = run_suite(provider, chosen)
            out[group] = res
    return out


def run_suite(
    provider: LLMProvider | None = None, cases: list[Case] | None = None
) -> dict[str, Any]:
    """Every case through `provider` (offline by default); the totals and the misses."""
    provider = provider or OfflineProvider()
    embedder = HashEmbedder()
    started = time.perf_counter()
    results = [run_case(c, provider, embedder) for c in (cases or CASES)]
    expected = sum(r.expected for r in results)
    found = sum(r.found for r in results)
    n_active = sum(len(r.active) for r in results)
    precise = n_active - sum(len(r.unexpected) for r in results)
    return {
        "provider": provider.name,
        "model": provider.model,
        "cases": len(results),
        "expected_facts": expected,
        "found": found,
        "recall": round(found / expected, 4) if expected else 1.0,
        "active_facts": n_active,
        "precision": round(precise / n_active, 4) if n_active else 1.0,
        "wrong_supersessions": sum(len(r.wrong_superseded) for r in results),
        "assistant_facts": sum(len(r.assistant_facts) for r in results),
        "wall_s": round(time.perf_counter() - started, 3),
        "failures": [
            {
                "case": r.name,
                "missing": r.missing,
                "wrong_superseded": r.wrong_superseded,
                "assistant_facts": r.assistant_facts,
                "active": r.active,
            }
            for r in results
            if r.missing or r.wrong_superseded or r.assistant_facts
        ],
    }
