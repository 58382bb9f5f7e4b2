"""The run's time per stage and its estimated cost (issue 19)."""

from __future__ import annotations

import threading

import pytest

from episodic.llm.prices import estimated_cost_usd
from episodic.stages import StageClock
from episodic.vocab import Stage


def test_since_counts_only_what_came_after_the_snapshot() -> None:
    clock = StageClock()
    clock.add(Stage.EMBED, 2.0)
    before = clock.snapshot()
    clock.add(Stage.EMBED, 0.5)
    clock.add(Stage.WRITE, 0.25)
    after = clock.since(before)
    assert after["embed"] == 0.5 and after["write"] == 0.25 and after["read"] == 0.0
    assert set(after) == {s.value for s in Stage}


def test_threads_add_without_losing_time() -> None:
    clock = StageClock()

    def work() -> None:
        for _ in range(1000):
            clock.add(Stage.SEGMENT, 0.001)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert clock.snapshot()["segment"] == pytest.approx(8.0)


def test_measure_counts_the_block_even_when_it_raises() -> None:
    clock = StageClock()
    with pytest.raises(RuntimeError), clock.measure(Stage.FACTS):
        raise RuntimeError("boom")
    assert clock.snapshot()["facts"] > 0


def test_cost_from_the_price_table_and_none_without_one() -> None:
    # claude-haiku-4-5: $1 in, $5 out per million tokens; a dated id prices as its family
    assert estimated_cost_usd("anthropic", "claude-haiku-4-5-20251001", 1_000_000, 200_000) == 2.0
    assert estimated_cost_usd("anthropic", "claude-sonnet-4-5", 1000, 1000) == 0.018
    assert estimated_cost_usd("openai", "gemma3-270m", 5000, 500) is None
    assert estimated_cost_usd("offline", "offline", 5000, 500) == 0.0
