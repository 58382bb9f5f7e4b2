"""Retention, effective salience and the maintenance plan."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from episodic.decay import (
    DecayItem,
    DecayPolicy,
    effective_salience,
    plan_decay,
    recall_boost,
    retention,
    should_archive,
)

NOW = datetime(2024, 6, 1, tzinfo=UTC)


def item(
    item_id: str, salience: float, hours: float, recalls: int = 0, strength: float = 1.0
) -> DecayItem:
    return DecayItem(item_id, salience, recalls, NOW - timedelta(hours=hours), strength)


def test_retention_is_one_at_access_and_one_over_e_after_tau() -> None:
    assert retention(0.0, 0, 24.0) == 1.0
    assert retention(24.0, 0, 24.0) == pytest.approx(math.exp(-1))
    assert retention(48.0, 1, 24.0) == pytest.approx(math.exp(-1))  # S = 2


def test_retention_fades_with_time() -> None:
    values = [retention(h, 2, 24.0) for h in (0, 1, 10, 100, 1000)]
    assert values == sorted(values, reverse=True)
    assert len(set(values)) == len(values)


def test_more_recalls_fade_more_slowly() -> None:
    """The direction MemoryBank's `exp(-t / 5*S)` gets backwards by precedence."""
    t, tau = 72.0, 24.0
    ours = [retention(t, n, tau) for n in range(6)]
    assert ours == sorted(ours) and len(set(ours)) == len(ours)

    def memorybank(t: float, s: float) -> float:
        return math.exp(-t / 5 * s)  # as published: (t / 5) * S

    published = [memorybank(3.0, 1 + n) for n in range(6)]
    assert published == sorted(published, reverse=True)  # recalls make it fade faster


def test_retention_validates() -> None:
    with pytest.raises(ValueError):
        retention(1.0, 0, 0.0)
    with pytest.raises(ValueError):
        retention(1.0, -1, 24.0)
    with pytest.raises(ValueError):
        retention(math.nan, 0, 24.0)
    assert retention(-5.0, 0, 24.0) == 1.0  # an access in the future counts as now


def test_boost_is_bounded() -> None:
    assert recall_boost(0, 0.1, 0.5) == 0.0
    assert recall_boost(3, 0.1, 0.5) == pytest.approx(0.3)
    assert recall_boost(1_000_000, 0.1, 0.5) == 0.5
    assert effective_salience(6.0, 1.0, 1_000_000, 0.1, 0.5) == pytest.approx(9.0)


def test_effective_salience_is_salience_times_retention_with_boost() -> None:
    assert effective_salience(8.0, 0.5, 0) == pytest.approx(4.0)
    assert effective_salience(8.0, 0.5, 2, boost_per_recall=0.1, max_boost=0.5) == pytest.approx(
        4.8
    )
    assert effective_salience(10.0, 1.0, 50) == 10.0  # clipped to the scale
    assert effective_salience(0.0, 1.0, 5) == 0.0
    with pytest.raises(ValueError):
        effective_salience(5.0, 1.5, 0)
    with pytest.raises(ValueError):
        effective_salience(5.0, 0.5, 0, boost_per_recall=-0.1)


def test_archive_strictly_below_the_floor() -> None:
    assert should_archive(0.49, 0.5)
    assert not should_archive(0.5, 0.5)


def test_policy_validates() -> None:
    for bad in (
        {"tau_hours": 0.0},
        {"tau_hours": math.inf},
        {"floor": -1.0},
        {"floor": 11.0},
        {"max_boost": -0.1},
        {"boost_per_recall": -1.0},
        {"min_delta": -1.0},
    ):
        with pytest.raises(ValueError):
            DecayPolicy(**bad)


def test_policy_strength_is_one_for_a_fresh_item() -> None:
    p = DecayPolicy()
    assert p.strength(0.0, 0) == 1.0
    assert p.strength(0.0, 3) == pytest.approx(1.3)
    assert p.effective(7.0, 0.0, 0) == 7.0


def test_plan_decay_reports_changes_and_archivals_in_order() -> None:
    policy = DecayPolicy(tau_hours=24.0, floor=1.0)
    items = [
        item("fresh", 5.0, 0.0),  # unchanged: not reported
        item("fading", 8.0, 24.0),  # 8/e = 2.9: weaker, kept
        item("forgotten", 2.0, 72.0),  # 2/e^3 = 0.1: archived
        item("recalled", 2.0, 72.0, recalls=5),  # S = 6: 2 * e^-0.5 * 1.5 = 1.8, kept
    ]
    changes = plan_decay(items, NOW, policy)
    assert [c.item_id for c in changes] == ["fading", "forgotten", "recalled"]
    by_id = {c.item_id: c for c in changes}
    assert by_id["fading"].new_strength == pytest.approx(math.exp(-1))
    assert by_id["fading"].old_strength == 1.0
    assert not by_id["fading"].archive
    assert by_id["forgotten"].archive
    assert by_id["forgotten"].effective == pytest.approx(2.0 * math.exp(-3))
    assert not by_id["recalled"].archive
    assert by_id["recalled"].effective == pytest.approx(2.0 * math.exp(-0.5) * 1.5)


def test_plan_decay_is_pure_and_idempotent_for_unchanged_time() -> None:
    policy = DecayPolicy(tau_hours=24.0)
    items = [item("a", 6.0, 10.0)]
    first = plan_decay(items, NOW, policy)
    assert plan_decay(items, NOW, policy) == first
    # applying the new strength and planning again at the same time changes nothing
    applied = [item("a", 6.0, 10.0, strength=first[0].new_strength)]
    assert plan_decay(applied, NOW, policy) == []
    # naive timestamps are UTC
    naive = [DecayItem("a", 6.0, 0, (NOW - timedelta(hours=10)).replace(tzinfo=None))]
    assert plan_decay(naive, NOW, policy) == first
