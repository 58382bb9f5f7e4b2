"""The cosine spread to a turn's neighbours (`TurnSet.dense_top`, the third
ranking of the search): a turn ranks by the best cosine among itself and the
turns just before and after it in its own stream, whatever order its turns
and vectors arrived in; and the fusion of three rankings stays on the fixed
scale of two."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from episodic.retrieval import RRF_K, relevance
from episodic.service.turn_set import TurnSet
from storage.search import fuse

DIM = 8
T0 = datetime(2025, 3, 1, 9, 0)
# two streams of four turns; each turn's vector is its own axis
TURNS = [(s, q) for s in ("a", "b") for q in range(4)]


def _tid(stream: str, seq: int) -> str:
    return f"{stream}{seq}"


def _raw(turns: list[tuple[str, int]]) -> pa.Table:
    return pa.table({
        "turn_id": [_tid(s, q) for s, q in turns],
        "stream_id": [s for s, _ in turns],
        "seq": [q for _, q in turns],
        "role": ["user"] * len(turns),
        "text": [f"turn {s} {q}" for s, q in turns],
        "event_ts": [T0 + timedelta(minutes=q) for _, q in turns],
        "meta": ["{}"] * len(turns),
    })  # fmt: skip


def _vectors(turns: list[tuple[str, int]]) -> pa.Table:
    vecs = [np.eye(DIM, dtype=np.float32)[TURNS.index(t)].tolist() for t in turns]
    return pa.table({
        "turn_id": [_tid(s, q) for s, q in turns],
        "vector": pa.array(vecs, type=pa.list_(pa.float32(), DIM)),
    })  # fmt: skip


def _ids(ts: TurnSet, positions: list[int]) -> list[str]:
    return [ts.rows[p].turn_id for p in positions]


def test_a_turn_ranks_by_its_neighbours_best_cosine_in_its_own_stream() -> None:
    ts = TurnSet(DIM)
    ts.add_raw(_raw(TURNS))
    ts.add_vectors(_vectors(TURNS))
    q = np.eye(DIM, dtype=np.float32)[TURNS.index(("a", 2))]  # the query is turn a2
    near, spread = ts.dense_top(q, 3)
    assert _ids(ts, [p for p, _ in near])[0] == "a2"
    assert [c for _, c in near][0] == 1.0
    # a1 and a3 sit beside a2; b0, next to a3 in the set's order, is another stream
    assert set(_ids(ts, spread)) == {"a1", "a2", "a3"}


@settings(max_examples=40, deadline=None)
@given(st.permutations(TURNS), st.integers(1, 8), st.booleans())
def test_the_spread_does_not_depend_on_arrival_order(
    order: list[tuple[str, int]], part: int, vectors_first: bool
) -> None:
    whole = TurnSet(DIM)
    whole.add_raw(_raw(TURNS))
    whole.add_vectors(_vectors(TURNS))
    parts = TurnSet(DIM)
    if vectors_first:  # vectors read before their turns wait for them
        for i in range(0, len(order), part):
            parts.add_vectors(_vectors(order[i : i + part]))
    for i in range(0, len(order), part):
        parts.add_raw(_raw(order[i : i + part]))
        if not vectors_first:
            parts.add_vectors(_vectors(order[i : i + part]))
    for s, k in TURNS:
        q = np.eye(DIM, dtype=np.float32)[TURNS.index((s, k))] + 0.01
        beside = {_tid(s, x) for x in (k - 1, k, k + 1) if 0 <= x < 4}
        for t in (whole, parts):
            assert set(_ids(t, t.dense_top(q, len(beside))[1])) == beside


def test_first_in_three_rankings_scores_as_first_in_two() -> None:
    two = dict(fuse(["x", "y"], ["x", "y"]))
    three = dict(fuse(["x", "y"], ["x", "y"], spread_ids=["x", "y"]))
    assert two["x"] == pytest.approx(three["x"]) == 2.0 / (RRF_K + 1)
    assert relevance(three["x"]) == pytest.approx(1.0)
    only_spread = dict(fuse(["x"], ["x"], spread_ids=["z", "x"]))
    assert 0.0 < only_spread["z"] < only_spread["x"]


def test_only_the_newest_turns_without_a_vector_are_embedded_at_search() -> None:
    """`unembedded` names the turns among the `recent` newest (event time)
    that have no vector; once attached (or stored), a turn is not named
    again, and a stored vector arriving later leaves the attached one in place."""
    ts = TurnSet(DIM)
    ts.add_raw(_raw(TURNS))
    ts.add_vectors(_vectors(TURNS[:2]))  # a0, a1 consolidated
    # the newest three: b3 and a3 (minute 3; b3 read later), then b2
    assert _ids(ts, ts.unembedded(3)) == ["a3", "b2", "b3"]
    assert _ids(ts, ts.unembedded(100)) == ["a2", "a3", "b0", "b1", "b2", "b3"]
    fresh = ts.unembedded(3)
    ts.attach(
        fresh, np.stack([np.eye(DIM, dtype=np.float32)[TURNS.index(t)] for t in
                         (("a", 3), ("b", 2), ("b", 3))])
    )  # fmt: skip
    assert ts.unembedded(3) == []
    ts.add_vectors(_vectors(TURNS))  # the consolidation stores every vector
    assert ts.unembedded(100) == [] and len(ts.dense) == len(TURNS)
    near, _ = ts.dense_top(np.eye(DIM, dtype=np.float32)[TURNS.index(("b", 2))], 1)
    assert _ids(ts, [p for p, _ in near]) == ["b2"]


def test_the_newest_turn_is_embedded_whatever_its_streams_name() -> None:
    """A first read holds the streams in name order: the newest turn of a
    stream named first ("a") is not among the last read, yet it is the one a
    search must embed (a turn of a new "chat-9" beside an older "ops")."""
    ts = TurnSet(DIM)
    raw = _raw(TURNS)
    stamps = [T0 + timedelta(minutes=q) for _, q in TURNS]
    stamps[TURNS.index(("a", 3))] = T0 + timedelta(days=1)  # a3 came a day after the rest
    ts.add_raw(raw.set_column(raw.column_names.index("event_ts"), "event_ts", pa.array(stamps)))
    ts.add_vectors(_vectors([t for t in TURNS if t != ("a", 3)]))
    assert _ids(ts, ts.unembedded(2)) == ["a3"]
