"""A person corrects a fact (issue 30): invalidated, it stops being believed
but is kept, with a DELETE by `user-correction` in its history; restored, it
is active again with an ADD; doctor accepts both states."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.helpers import make_memory

pytestmark = pytest.mark.usefixtures("prefect_harness")


def test_invalidate_then_restore_a_fact(tmp_path: Path) -> None:
    memory = make_memory(tmp_path)
    memory.add("u", [{"role": "user", "text": "I live in Paris.", "ts": "2025-03-02T09:00:00Z"}])
    memory.consolidate("u", flush=True)
    (fact,) = memory.facts("u")
    gone = memory.invalidate_fact("u", fact.fact_id[:10])
    assert gone.status == "deleted" and gone.valid_to is not None
    assert memory.facts("u") == []
    assert [f.fact_id for f in memory.facts("u", include_inactive=True)] == [fact.fact_id]
    assert memory.doctor("u").ok
    back = memory.restore_fact("u", fact.fact_id)
    assert back.status == "active" and back.valid_to is None
    events = [(h.event, h.decided_by) for h in memory.fact_history("u", fact.fact_id)]
    assert events[-2:] == [("DELETE", "user-correction:user"), ("ADD", "user-correction:user")]
    assert memory.doctor("u").ok
    assert memory.restore_fact("u", fact.fact_id) == back  # already active: nothing new
    assert len(memory.fact_history("u", fact.fact_id)) == len(events)
