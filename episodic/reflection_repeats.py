"""Reflections that say again what another says: one run's focal questions
often lead to the same insight twice (the same theme, its evidence seen from
two questions), and a later run can find a theme the memory already holds.

A repeat is a new reflection whose vector lies within `NEAR` (cosine) of one
kept before it in the same run, or of one the user already holds. A repeat
within the run gives its evidence to the one kept (the one citing more
evidence is kept); a repeat of a held reflection is not written again.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from episodic.models import Reflection

# the same insight worded again, not two themes in one template: on the
# demo store the two "Postgres keeps coming back" reflections lie at .987,
# "Rex" and "Postgres" themes with the same quoted example at .88
NEAR = 0.95


def _unit(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    m = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1.0, norms)


def _joined(a: list[str], b: list[str]) -> list[str]:
    return list(dict.fromkeys(a + b))


def without_repeats(
    new: Sequence[Reflection], held: Sequence[Sequence[float]], near: float = NEAR
) -> tuple[list[Reflection], int]:
    """`new` (vectors set) less its repeats, and how many were dropped."""
    if not new:
        return [], 0
    order = sorted(
        new,
        key=lambda r: (-(len(r.evidence_episode_ids) + len(r.evidence_fact_ids)), -r.importance),
    )
    vecs = _unit([r.vector for r in order])
    old = _unit(held) if held else np.zeros((0, vecs.shape[1]), dtype=np.float32)
    kept: list[int] = []
    merged: dict[int, Reflection] = {}
    for i, r in enumerate(order):
        if old.shape[0] and float((old @ vecs[i]).max()) >= near:
            continue
        twin = next((k for k in kept if float(vecs[k] @ vecs[i]) >= near), None)
        if twin is None:
            kept.append(i)
            merged[i] = r
            continue
        base = merged[twin]
        merged[twin] = base.model_copy(
            update={
                "evidence_episode_ids": _joined(base.evidence_episode_ids, r.evidence_episode_ids),
                "evidence_fact_ids": _joined(base.evidence_fact_ids, r.evidence_fact_ids),
                "importance": max(base.importance, r.importance),
            }
        )
    return [merged[k] for k in kept], len(new) - len(kept)
