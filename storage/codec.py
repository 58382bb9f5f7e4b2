"""Conversions between domain values and LanceDB rows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import numpy as np


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
