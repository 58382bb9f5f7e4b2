"""Every table, declared once: a row class (a domain model from
`episodic.models`, or a storage row from `storage.rows`) plus the few columns
only storage keeps. The Arrow schema is derived from the row class's typed
fields through one mapping (`arrow_type`); `storage.codec` converts rows both
ways through the same mapping. Every row carries `user_id`. Datetimes are naive
UTC (LanceDB's convention); the codec converts at the boundary.

| Python field type           | Arrow column                     |
| --------------------------- | -------------------------------- |
| str, Literal, StrEnum       | string (None stored as "")       |
| int / float / bytes         | int64 / float64 / binary         |
| datetime (or None)          | timestamp[us], naive UTC         |
| list[str]                   | list<string>                     |
| list[float]                 | fixed_size_list<float32>[dim]    |
| dict                        | string holding sorted JSON       |
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Union, get_args, get_origin

import pyarrow as pa
from pydantic import BaseModel

from episodic.models import Episode, Fact, FactHistory, Reflection, Rejected, Turn
from storage.rows import Checkpoint, ReflectionMark, StreamHead, TurnVector

TS = pa.timestamp("us")


def vec(dim: int) -> pa.DataType:
    return pa.list_(pa.float32(), dim)


def unwrap_optional(tp: Any) -> tuple[Any, bool]:
    """(T, True) for `T | None`, else (tp, False)."""
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(get_args(tp)) == 2:
            return args[0], True
        raise TypeError(f"no column type for the union {tp}")
    return tp, False


def arrow_type(tp: Any, dim: int) -> pa.DataType:
    """The column type of a field annotation (table in the module docstring)."""
    tp, _ = unwrap_optional(tp)
    origin = get_origin(tp)
    if tp is str or origin is Literal or (isinstance(tp, type) and issubclass(tp, enum.Enum)):
        return pa.string()
    if tp is datetime:
        return TS
    simple = {int: pa.int64(), float: pa.float64(), bytes: pa.binary()}
    if tp in simple:
        return simple[tp]
    if origin is list and get_args(tp) == (str,):
        return pa.list_(pa.string())
    if origin is list and get_args(tp) == (float,):
        return vec(dim)
    if origin is dict:
        return pa.string()
    raise TypeError(f"no column type for {tp}")


def field_types(cls: type) -> dict[str, Any]:
    """The typed fields of a pydantic model or a dataclass, in declaration order."""
    if isinstance(cls, type) and issubclass(cls, BaseModel):
        return {n: f.annotation for n, f in cls.model_fields.items()}
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(typing.cast(Any, cls))}


@dataclass(frozen=True)
class Column:
    """A column the row class does not have (a key, a write time, a derived value)."""

    name: str
    type: Any
    after: str | None  # the column it follows; None: first


@dataclass(frozen=True)
class TableSpec:
    name: str
    row: type  # the declaration: its typed fields are the columns
    key: str  # the merge key
    extra: tuple[Column, ...] = ()
    skip: tuple[str, ...] = ()  # row fields not stored

    def columns(self) -> dict[str, Any]:
        """Column name -> field annotation, in column order."""
        cols = [(n, t) for n, t in field_types(self.row).items() if n not in self.skip]
        for c in self.extra:
            at = 0 if c.after is None else [n for n, _ in cols].index(c.after) + 1
            cols.insert(at, (c.name, c.type))
        return dict(cols)

    def schema(self, dim: int = 384) -> pa.Schema:
        return pa.schema([(n, arrow_type(t, dim)) for n, t in self.columns().items()])


TABLES: dict[str, TableSpec] = {
    s.name: s
    for s in (
        TableSpec("raw_turns", Turn, "turn_id"),
        # one row per (user, stream): the head of the raw log, so polls never scan raw
        TableSpec(
            "streams",
            StreamHead,
            "key",
            (Column("key", str, None), Column("updated_at", datetime, "last_event_ts")),
        ),
        TableSpec("turn_vectors", TurnVector, "key"),
        TableSpec(
            "rejected_input",
            Rejected,
            "reject_id",
            (Column("reject_id", str, None), Column("at", datetime, "raw")),
        ),
        TableSpec("episodes", Episode, "episode_id"),
        TableSpec("facts", Fact, "fact_id", (Column("norm", str, "text"),)),
        TableSpec("fact_history", FactHistory, "history_id"),
        TableSpec("reflections", Reflection, "reflection_id"),
        TableSpec("segmenter_state", Checkpoint, "key", (Column("key", str, None),)),
        # per user: when the last reflection ran; the salience piled up since is
        # summed from the episodes closed after it, never stored twice
        TableSpec("reflection_marks", ReflectionMark, "user_id"),
    )
}


def schema(name: str, dim: int = 384) -> pa.Schema:
    return TABLES[name].schema(dim)
