"""The in-memory index of stored turn ids (storage.stored_ids) never rules
out an id raw holds: after this process's appends, another store handle's,
a compaction and a forget; and it does rule out ids never stored, which is
what spares each acknowledged add its query."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from episodic.models import TurnIn, stable_id
from storage.db import Store
from storage.raw import RawLog
from storage.stored_ids import MERGE_AT, key, keys

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _turns(user: str, lo: int, hi: int) -> list[TurnIn]:
    return [
        TurnIn(
            user_id=user,
            stream_id="s",
            role="user",
            kind="other",
            text=f"turn {i}",
            event_ts=T0 + timedelta(seconds=i),
            source="api",
            position=str(i),
        )
        for i in range(lo, hi)
    ]


@given(st.lists(st.text(max_size=40), max_size=30))
@settings(max_examples=60, deadline=None)
def test_vectorised_keys_equal_the_scalar_key(texts: list[str]) -> None:
    ids = [stable_id(t) for t in texts] + texts  # hex ids, and ids that are not
    assert keys(pa.array(ids, pa.string())).tolist() == [key(i) for i in ids]
    hexed = pa.chunked_array([pa.array([stable_id(t) for t in texts], pa.string())])
    assert keys(hexed).tolist() == [key(stable_id(t)) for t in texts]


@pytest.mark.parametrize("merge_at", [16, MERGE_AT])  # the sorted array, and the set alone
def test_stored_ids_are_never_ruled_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, merge_at: int
) -> None:
    monkeypatch.setattr("storage.stored_ids.MERGE_AT", merge_at)
    uri = str(tmp_path / "db")
    raw = RawLog(Store(uri))
    mine = _turns("u1", 0, 50)
    raw.append(mine)
    never = [t.turn_id for t in _turns("u1", 1000, 1100)]
    assert raw.stored.maybe(never) == [], "ids never stored are ruled out"
    assert raw.stored.maybe([t.turn_id for t in mine]) == [t.turn_id for t in mine]

    theirs = _turns("u2", 0, 40)  # another handle on the store (another process)
    RawLog(Store(uri)).append(theirs)
    assert raw.existing_ids([t.turn_id for t in theirs]) == {t.turn_id for t in theirs}

    raw.store.table("raw_turns").optimize()  # compaction rewrites the fragments
    every = [t.turn_id for t in mine + theirs]
    assert sorted(raw.stored.maybe(every)) == sorted(every)
    assert raw.append(mine + theirs).duplicates == len(every)

    raw.store.table("raw_turns").delete("user_id = 'u2'")  # a stale id costs a lookup only
    assert raw.existing_ids([t.turn_id for t in theirs]) == set()
    assert raw.append(theirs).accepted == len(theirs)
