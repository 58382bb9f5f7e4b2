"""The API killed mid-batch (SIGKILL, its whole process group) and restarted
on the same store while clients retry with their Idempotency-Keys: every
answered turn is stored once, and the answers' accepted counts add up to what
raw holds (issue 29: 0 lost, 0 stored twice after kills and retries)."""

from __future__ import annotations

from pathlib import Path

from episodic.bench.api import _start
from episodic.bench.api_kills import kill_phase
from storage.db import Store
from storage.keys import ApiKeys


def test_kills_mid_batch_lose_nothing_and_store_nothing_twice(tmp_path: Path) -> None:
    key = ApiKeys(Store(str(tmp_path / "lancedb"))).create("bench")[0]
    out = kill_phase(
        tmp_path, _start, {"Authorization": f"Bearer {key}"}, kills=2, clients=2, batches=12
    )
    assert out["kills"] == 2 and out["batches_given_up"] == 0
    assert out["client_retries"] > 0  # requests were cut off and sent again
    assert out["batches_answered"] == 24
    assert (out["lost"], out["stored_twice"], out["accepted_minus_stored"]) == (0, 0, 0)
    assert out["stored_turns"] == 2 * 12 * 100  # every batch in, once
