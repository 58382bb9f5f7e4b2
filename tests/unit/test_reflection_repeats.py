"""Reflections that repeat one another: merged within a run (the one citing
more evidence kept, with the other's evidence), not written again when the
user holds one already; distinct directions untouched."""

from __future__ import annotations

from datetime import datetime

from episodic.models import Reflection
from episodic.reflection_repeats import NEAR, without_repeats

AT = datetime(2025, 3, 1)


def _r(rid: str, vector: list[float], episodes: list[str], importance: float = 5.0) -> Reflection:
    return Reflection(
        reflection_id=rid,
        user_id="u",
        text=rid,
        vector=vector,
        evidence_episode_ids=episodes,
        importance=importance,
        created_at=AT,
    )


def test_a_repeat_within_a_run_gives_its_evidence_to_the_richer_one() -> None:
    thin = _r("thin", [1.0, 0.0, 0.0], ["e1"], importance=7.0)
    rich = _r("rich", [0.99, 0.05, 0.0], ["e1", "e2"], importance=5.0)
    other = _r("other", [0.0, 1.0, 0.0], ["e3"])
    kept, repeats = without_repeats([thin, rich, other], held=[])
    assert repeats == 1
    assert [r.reflection_id for r in kept] == ["rich", "other"]
    assert kept[0].evidence_episode_ids == ["e1", "e2"] and kept[0].importance == 7.0


def test_a_repeat_of_a_held_reflection_is_not_written_again() -> None:
    new = [_r("again", [0.0, 0.0, 2.0], ["e1"]), _r("fresh", [1.0, 1.0, 0.0], ["e2"])]
    kept, repeats = without_repeats(new, held=[[0.0, 0.01, 1.0]])
    assert ([r.reflection_id for r in kept], repeats) == (["fresh"], 1)


def test_two_themes_below_the_bound_are_both_kept() -> None:
    # cosine just under NEAR: two insights, not one said twice
    angle = 0.999 * NEAR
    a = _r("a", [1.0, 0.0], ["e1"])
    b = _r("b", [angle, (1 - angle**2) ** 0.5], ["e2"])
    kept, repeats = without_repeats([a, b], held=[[0.0, 1.0]])
    assert (sorted(r.reflection_id for r in kept), repeats) == (["a", "b"], 0)
    assert without_repeats([], held=[[1.0, 0.0]]) == ([], 0)
