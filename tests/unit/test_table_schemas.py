"""Each table is declared once (a row class plus storage-only columns); the
Arrow schemas derived from the declarations match the columns that stores
written by earlier versions hold, name for name and type for type."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from episodic.models import Episode, Fact, FactHistory, Turn
from storage.codec import from_row, to_row
from storage.rows import Checkpoint, StreamHead
from storage.schemas import TABLES, arrow_type

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "table_schemas.json"
T0 = datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)


@pytest.mark.parametrize("name", sorted(json.loads(GOLDEN.read_text())))
def test_derived_schema_is_the_stored_one(name: str) -> None:
    want = json.loads(GOLDEN.read_text())[name]
    got = [[f.name, str(f.type)] for f in TABLES[name].schema(8)]
    assert got == want


def test_every_table_has_a_golden_schema() -> None:
    assert set(TABLES) == set(json.loads(GOLDEN.read_text()))


def test_a_field_type_without_a_column_type_is_refused() -> None:
    with pytest.raises(TypeError):
        arrow_type(set[str], 8)
    with pytest.raises(TypeError):
        arrow_type(int | str, 8)
    assert arrow_type(list[float], 4) == pa.list_(pa.float32(), 4)


def _episode(**kw: Any) -> Episode:
    base: dict[str, Any] = dict(
        episode_id="e1", user_id="u", stream_id="s", first_seq=0, last_seq=2,
        turn_ids=["a", "b", "c"], n_turns=3, started_at=T0, ended_at=T0,
        closed_at=T0 + timedelta(seconds=1), boundary_reason="idle", boundary_score=0.5,
        signal_scores={"idle": 1.0}, centroid=[0.5, 0.25, 0.0, 1.0],
    )  # fmt: skip
    return Episode(**(base | kw))


def test_episode_round_trip_naive_utc_json_and_empty_ids() -> None:
    e = _episode(parent_episode_id=None, last_recalled_at=None, facts_state="planned")
    row = to_row(e, 4)
    assert row["started_at"] == T0.replace(tzinfo=None)  # naive UTC stored
    assert row["signal_scores"] == '{"idle": 1.0}'
    assert row["parent_episode_id"] == "" and row["last_recalled_at"] is None
    assert set(row) == set(TABLES["episodes"].columns())
    assert from_row(Episode, row) == e


def test_aware_datetimes_in_other_zones_are_stored_as_utc() -> None:
    east = timezone(timedelta(hours=5))
    e = _episode(started_at=T0.astimezone(east))
    assert to_row(e, 4)["started_at"] == T0.replace(tzinfo=None)
    assert from_row(Episode, to_row(e, 4)).started_at == T0


def test_nulls_take_the_fields_defaults() -> None:
    row = to_row(_episode(), 4) | {"strength": None, "salience": None, "summary": None}
    e = from_row(Episode, row)
    assert (e.strength, e.salience, e.summary) == (1.0, 0, "")


def test_absent_vectors_are_zeros_of_the_dimension() -> None:
    f = Fact(fact_id="f", user_id="u", text="T", valid_from=T0, created_at=T0)
    row = to_row(f, 3, norm="t")
    assert row["vector"] == [0.0, 0.0, 0.0] and row["norm"] == "t"
    assert row["supersedes"] == ""
    back = from_row(Fact, row)
    assert back.supersedes is None and back.valid_to is None


def test_storage_only_columns_come_from_extra_or_properties() -> None:
    h = StreamHead("u", "s", 4, 5, None)
    row = to_row(h, 0, updated_at=T0)
    assert row["key"] == h.key and row["updated_at"] == T0.replace(tzinfo=None)
    assert from_row(StreamHead, row) == h
    cp = Checkpoint("u", "s", watermark=3, open_turn_ids=["x"], detector=b"\x00", updated_at=T0)
    assert from_row(Checkpoint, to_row(cp, 0)) == cp


def test_turn_meta_and_history_round_trip() -> None:
    t = Turn(
        turn_id="t", user_id="u", stream_id="s", seq=0, role="user", kind="other", text="hi",
        event_ts=T0, ingest_ts=T0, source="api", position="3", meta={"b": [1], "a": "x"},
    )  # fmt: skip
    assert from_row(Turn, to_row(t, 0)) == t
    h = FactHistory(
        history_id="h", user_id="u", fact_id="f", event="ADD", episode_id="e",
        decided_by="llm", at=T0, new_text="n",
    )  # fmt: skip
    assert from_row(FactHistory, to_row(h, 0)) == h


def test_an_object_of_no_table_is_refused() -> None:
    with pytest.raises(KeyError):
        to_row(object(), 0)
