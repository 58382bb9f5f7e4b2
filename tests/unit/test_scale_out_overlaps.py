"""The overlap count that `episodic bench scale-out` reads from run history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from episodic.bench.scale_out import overlaps, synthetic_corpus

T = datetime(2026, 1, 1, tzinfo=UTC)


def _at(a: int, b: int) -> tuple[datetime, datetime]:
    return T + timedelta(seconds=a), T + timedelta(seconds=b)


def test_one_users_runs_that_intersect_count_other_users_do_not() -> None:
    runs: list[tuple[str, datetime | None, datetime | None]] = [
        ("u1", *_at(0, 10)),
        ("u1", *_at(10, 20)),
        ("u2", *_at(5, 15)),
    ]
    assert overlaps(runs) == 0  # back to back, and a different user
    assert overlaps([*runs, ("u1", *_at(9, 11))]) == 2
    assert overlaps([("u1", T, None), ("u1", *_at(0, 5))]) == 0  # never started/ended


def test_corpus_shape() -> None:
    rows = synthetic_corpus(users=3, streams=2, turns=8)
    assert len(rows) == 3 * 2 * 8
    assert len({(r["user_id"], r["stream_id"]) for r in rows}) == 6
