"""The search's order: best score first, and an exact tie goes to the fact
(what is believed now), then the reflection, then the turn, whatever ids
they have."""

from __future__ import annotations

from episodic.retrieval import Components
from episodic.service.search import hit_order
from storage.search import Match


def _cand(
    kind: str, item_id: str, score: float
) -> tuple[Components, str, Match, dict[str, object]]:
    return (Components(1.0, 1.0, 0.3, score), kind, Match(item_id, 0.03, 1, 1, 0.5), {})


def test_a_tie_goes_to_the_fact_then_the_reflection() -> None:
    cands = [
        _cand("turns", "0-turn", 1.13),
        _cand("reflections", "1-reflection", 1.13),
        _cand("facts", "2-fact", 1.13),
        _cand("turns", "3-better", 1.5),
        _cand("facts", "4-worse", 0.2),
    ]
    ranked = [c[2].item_id for c in sorted(cands, key=hit_order)]
    assert ranked == ["3-better", "2-fact", "1-reflection", "0-turn", "4-worse"]
