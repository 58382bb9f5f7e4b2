"""Safe filters. User values are always bound as literals through lancedb's
expression builder, never formatted into SQL text; `to_sql()` escapes quotes
for the few APIs (count_rows) that still take a string."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from lancedb import col, lit
from lancedb.expr import Expr


def eq(column: str, value: str | int) -> Expr:
    return col(column) == lit(value)


def user(user_id: str) -> Expr:
    return eq("user_id", user_id)


def stream(user_id: str, stream_id: str) -> Expr:
    return user(user_id) & eq("stream_id", stream_id)


def within(column: str, values: Iterable[str]) -> Expr:
    vals = list(values)
    if not vals:
        raise ValueError(f"empty IN list for {column}")
    return col(column).isin(vals)


def user_in(user_id: str, column: str, values: Iterable[str]) -> Expr:
    return user(user_id) & within(column, values)


def seq_range(user_id: str, stream_id: str, after: int, upto: int) -> Expr:
    return stream(user_id, stream_id) & (col("seq") > lit(after)) & (col("seq") <= lit(upto))


def sql(expr: Expr) -> str:
    return str(expr.to_sql())


def ne(column: str, value: str | int) -> Expr:
    return col(column) != lit(value)


def after(column: str, ts: datetime) -> Expr:
    """column > ts; an aware ts is compared in naive UTC, as the tables store it."""
    if ts.tzinfo is not None:
        ts = ts.astimezone(UTC).replace(tzinfo=None)
    return col(column) > lit(ts)
