"""LoCoMo: the shipped search and the hybrid baselines, at an equal budget of
turns and of tokens (docs/retrieval.md).

Every method yields, per question, units in rank order: lists of conversation
rows, the hit first. A budget takes units in order and counts each turn once
(overlapping units cost only their new turns); the last unit is cut. In tokens,
a turn costs ceil(len("speaker: text") / 4) and a fact or reflection the tokens
of its text; the token budget is `budget` times the mean turn of the file.

- `<unit>_cos`: units ranked by the cosine of their mean turn vector;
- `<unit>_hybrid`: the same cosine ranking and BM25 over the unit's text
  (LanceDB FTS), fused by the one RRF of `storage.search.fuse`;
- `turn_pm<k>_*`: single-turn hits, each returned with k neighbours per side;
- `shipped`: `Memory.search` (episodic.service.memory), exactly what `episodic search` runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np

from episodic.service.memory import Memory
from storage.search import TextIndex, fuse

POOL = 100
UNIT_KINDS = ("turn", "window5", "window10", "window20", "session", "episode")
EXPANSIONS = (1, 2, 4)
SHIPPED = "shipped"
# methods that use no segmentation (hybrid ones included)
BASELINES = tuple(
    [f"{u}_{s}" for u in UNIT_KINDS if u != "episode" for s in ("cos", "hybrid")]
    + [f"turn_pm{k}_{s}" for k in EXPANSIONS for s in ("cos", "hybrid")]
)


def tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def take_turns(units: Iterable[Sequence[int]], budget: int) -> set[int]:
    got: list[int] = []
    seen: set[int] = set()
    for rows in units:
        for r in rows:
            if len(got) >= budget:
                return seen
            if r not in seen:
                seen.add(r)
                got.append(r)
    return seen


def take_tokens(
    units: Iterable[tuple[Sequence[int], int]], cost: Sequence[int], budget: int
) -> set[int]:
    """units: (rows, tokens of text that comes with them: a fact, a reflection)."""
    used = 0
    seen: set[int] = set()
    for rows, extra in units:
        used += extra
        if used > budget:
            return seen
        for r in rows:
            if r in seen:
                continue
            if used + cost[r] > budget:
                return seen
            used += cost[r]
            seen.add(r)
    return seen


def recall(evidence: Sequence[str], dia: Sequence[str], rows: Iterable[int]) -> float:
    ev = set(evidence)
    return len(ev & {dia[r] for r in rows}) / len(ev)


@dataclass
class Tallies:
    turns: dict[str, list[float]] = field(default_factory=dict)
    tokens: dict[str, list[float]] = field(default_factory=dict)

    def add(self, method: str, at_turns: float, at_tokens: float) -> None:
        self.turns.setdefault(method, []).append(at_turns)
        self.tokens.setdefault(method, []).append(at_tokens)


def _windows(sessions: Sequence[Sequence[int]], size: int) -> list[list[int]]:
    return [list(s[i : i + size]) for s in sessions for i in range(0, len(s), size)]


def unit_groups(
    n_turns: int, sessions: Sequence[Sequence[int]], episodes: Sequence[Sequence[int]]
) -> dict[str, list[list[int]]]:
    return {
        "turn": [[i] for i in range(n_turns)],
        "window5": _windows(sessions, 5),
        "window10": _windows(sessions, 10),
        "window20": _windows(sessions, 20),
        "session": [list(s) for s in sessions],
        "episode": [list(e) for e in episodes],
    }


def _neighbours(i: int, k: int, n: int) -> list[int]:
    out = [i]
    for d in range(1, k + 1):
        out += [j for j in (i - d, i + d) if 0 <= j < n]
    return out


def score_conversation(
    memory: Memory,
    sid: str,
    lines: Sequence[str],
    dia: Sequence[str],
    turn_mat: np.ndarray,
    groups: dict[str, list[list[int]]],
    row_of_turn: dict[str, int],
    questions: Sequence[tuple[str, list[str], int]],
    qvecs: np.ndarray,
    budget: int,
    token_budget: int,
    indexes: dict[str, TextIndex],
    end: Any,
    tallies: Tallies,
) -> None:
    cost = [tokens(x) for x in lines]
    n = len(lines)
    cos_of: dict[str, np.ndarray] = {}
    for kind, units in groups.items():
        mat = np.stack([turn_mat[u].sum(axis=0) for u in units])
        mat /= np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-9)
        cos_of[kind] = qvecs @ mat.T
        indexes[kind].put(sid, ["\n".join(lines[i] for i in u) for u in units])
    for qi, (question, evidence, _) in enumerate(questions):
        for kind, units in groups.items():
            cos_order = [int(u) for u in np.argsort(-cos_of[kind][qi], kind="stable")]
            text = indexes[kind].query(sid, question, POOL)
            fused = [
                int(u) for u, _ in fuse([str(u) for u in text], [str(u) for u in cos_order[:POOL]])
            ]
            seen = set(fused)
            hybrid = fused + [u for u in cos_order if u not in seen]
            for scorer, order in (("cos", cos_order), ("hybrid", hybrid)):
                ranked = [units[u] for u in order]
                tallies.add(
                    f"{kind}_{scorer}",
                    recall(evidence, dia, take_turns(ranked, budget)),
                    recall(
                        evidence, dia, take_tokens(((u, 0) for u in ranked), cost, token_budget)
                    ),
                )
                if kind == "turn":
                    for k in EXPANSIONS:
                        exp = [_neighbours(u, k, n) for u in order]
                        tallies.add(
                            f"turn_pm{k}_{scorer}",
                            recall(evidence, dia, take_turns(exp, budget)),
                            recall(
                                evidence,
                                dia,
                                take_tokens(((u, 0) for u in exp), cost, token_budget),
                            ),
                        )
        hits = memory.search(
            sid,
            question,
            k=10 * budget,
            max_turns=2 * budget,
            record=False,
            now=end + timedelta(hours=1),
        )
        units_ = [
            (
                [row_of_turn[t.turn_id] for t in h.turns if t.turn_id in row_of_turn],
                0 if h.kind == "turn" else tokens(h.text),
            )
            for h in hits
        ]
        tallies.add(
            SHIPPED,
            recall(evidence, dia, take_turns((u for u, _ in units_), budget)),
            recall(evidence, dia, take_tokens(units_, cost, token_budget)),
        )
        turn_only = [u for (u, _), h in zip(units_, hits, strict=True) if h.kind == "turn"]
        tallies.add(
            "shipped_turns_only",
            recall(evidence, dia, take_turns(turn_only, budget)),
            recall(evidence, dia, take_tokens(((u, 0) for u in turn_only), cost, token_budget)),
        )


MEASURES = ("recall_at_budget", "recall_at_token_budget")


def best_baselines(methods: dict[str, dict[str, Any]], shipped: str) -> dict[str, dict[str, Any]]:
    """Per measure, the best non-segmented baseline and the shipped search's
    margin over it (issue 31's target: at least .03)."""
    out: dict[str, dict[str, Any]] = {}
    for key in MEASURES:
        have = [b for b in BASELINES if key in methods.get(b, {})]
        if not have or key not in methods.get(shipped, {}):
            continue
        best = max(have, key=lambda b: float(methods[b][key]))
        out[key] = {
            "method": best,
            "value": methods[best][key],
            "shipped_margin": round(float(methods[shipped][key]) - float(methods[best][key]), 4),
        }
    return out


def summarise(t: Tallies) -> dict[str, dict[str, float]]:
    return {
        m: {
            "recall_at_budget": round(float(np.mean(t.turns[m])), 4),
            "recall_at_token_budget": round(float(np.mean(t.tokens[m])), 4),
        }
        for m in sorted(t.turns)
    }
