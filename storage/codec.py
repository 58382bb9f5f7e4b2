"""Conversions between domain values and LanceDB rows, for every table through
the one field-type mapping of `storage.schemas`: naive UTC datetimes, JSON
text for dicts, zero-filled float32 vectors, "" for an absent string."""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from functools import cache
from typing import Any, Literal, TypeVar, get_args, get_origin

import numpy as np
import pyarrow as pa

from storage.schemas import TABLES, TableSpec, unwrap_optional

T = TypeVar("T")
_OMIT: Any = object()  # a null in a column whose field has a default: take the default


def to_naive(ts: datetime | None) -> datetime | None:
    """Naive UTC for LanceDB (it drops the zone of aware values)."""
    if ts is None:
        return None
    if ts.tzinfo is not None:
        ts = ts.astimezone(UTC).replace(tzinfo=None)
    return ts


def to_aware(ts: Any) -> datetime | None:
    if ts is None:
        return None
    if hasattr(ts, "to_pydatetime"):
        ts = ts.to_pydatetime()
    if not isinstance(ts, datetime):
        return None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def loads(text: str | None, default: Any = None) -> Any:
    if not text:
        return default
    return json.loads(text)


def vector(values: Any, dim: int) -> list[float]:
    """A storable vector: zeros when absent, never NaN."""
    if values is None or len(values) == 0:
        return [0.0] * dim
    arr = np.nan_to_num(np.asarray(values, dtype=np.float32), nan=0.0, posinf=0.0, neginf=0.0)
    if arr.shape != (dim,):
        raise ValueError(f"vector of shape {arr.shape}, expected ({dim},)")
    return [float(x) for x in arr.tolist()]


# ---- the generic codec ------------------------------------------------------
def _kind(tp: Any) -> str:
    origin = get_origin(tp)
    if tp is str:
        return "str"
    if origin is Literal or (isinstance(tp, type) and issubclass(tp, enum.Enum)):
        return "enum"
    if origin is list:
        return "vector" if get_args(tp) == (float,) else "list"
    if origin is dict:
        return "json"
    names = {datetime: "datetime", int: "int", float: "float", bytes: "bytes"}
    return names[tp]


@cache
def _plan(spec: TableSpec) -> tuple[tuple[str, str, bool], ...]:
    """(column, kind, optional) for every column of the table."""
    out = []
    for name, tp in spec.columns().items():
        base, optional = unwrap_optional(tp)
        out.append((name, _kind(base), optional))
    return tuple(out)


_SPECS: dict[Any, TableSpec] = {spec.row: spec for spec in TABLES.values()}


def _spec_of(row: type) -> TableSpec:
    if row not in _SPECS:
        raise KeyError(f"{row.__name__} is no table's row")
    return _SPECS[row]


def _encode(kind: str, optional: bool, value: Any, dim: int) -> Any:
    if value is None:
        if kind in ("str", "enum", "json"):
            return "" if kind != "json" else dumps({})
        return [0.0] * dim if kind == "vector" else None
    if kind == "enum":
        return str(value.value) if isinstance(value, enum.Enum) else str(value)
    if kind == "str":
        return str(value)
    if kind == "datetime":
        return to_naive(value)
    if kind == "json":
        return value if isinstance(value, str) else dumps(value)
    if kind == "vector":
        return vector(value, dim)
    if kind == "list":
        return list(value)
    if kind == "float":
        return float(value)
    if kind == "int":
        return int(value)
    return value


def _decode(kind: str, optional: bool, value: Any) -> Any:
    if value is None or (optional and kind in ("str", "enum") and value == ""):
        if optional:
            return None
        return "" if kind == "str" else _OMIT
    if kind == "datetime":
        return to_aware(value)
    if kind == "json":
        return loads(value, {})
    if kind in ("list", "vector"):
        return list(value)
    if kind == "bytes":
        return bytes(value)
    return value


def encode_column(table: str, column: str, value: Any, dim: int) -> Any:
    """One column's stored value (for updates that write a few columns)."""
    for name, kind, optional in _plan(TABLES[table]):
        if name == column:
            return _encode(kind, optional, value, dim)
    raise KeyError(f"{table} has no column {column}")


def to_row(obj: Any, dim: int, **extra: Any) -> dict[str, Any]:
    """The stored row of a domain object; `extra` gives the columns its class
    does not have (keys, write times, derived values)."""
    spec = _spec_of(type(obj))
    return {
        name: _encode(kind, optional, extra[name] if name in extra else getattr(obj, name), dim)
        for name, kind, optional in _plan(spec)
    }


@cache
def _fields(spec: TableSpec) -> tuple[tuple[str, str, bool], ...]:
    """`_plan` without the storage-only columns: what a row's object is built from."""
    skip = {c.name for c in spec.extra}
    return tuple(p for p in _plan(spec) if p[0] not in skip)


def from_row(row_type: type[T], row: Mapping[str, Any]) -> T:
    """The domain object of a stored row; storage-only columns are dropped."""
    kwargs: dict[str, Any] = {}
    for name, kind, optional in _fields(_spec_of(row_type)):
        if name not in row:
            continue
        value = _decode(kind, optional, row[name])
        if value is not _OMIT:
            kwargs[name] = value
    return row_type(**kwargs)


def to_table(
    table: str, rows: Iterable[Mapping[str, Any]], dim: int, *, columns: Any = None
) -> pa.Table:
    """Rows as an Arrow table of `table`'s schema (or of some of its columns)."""
    schema = TABLES[table].schema(dim)
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns])
    return pa.Table.from_pylist(list(rows), schema=schema)
