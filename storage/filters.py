"""Safe filters. Each condition is built twice from bound literals, never as
SQL text: a lancedb `Expr` for table queries and deletes, and a pyarrow
`Expression` for pylance dataset scans, counts and updates.

No condition is ever rendered to a string: lancedb's `Expr.to_sql()` does not
double a quote that follows a backslash (`x\\' OR 1=1` ends the literal) and
takes `''` for a quote already escaped (`o''neil` matches `o'neil`), and its
`Table.update` and `count_rows` lower a condition through it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow.compute as pc
from lancedb import col, lit
from lancedb.expr import Expr

Value = str | int | datetime


@dataclass(frozen=True, eq=False)
class Cond:
    """One condition in LanceDB's two non-SQL forms."""

    lance: Expr  # `table.search().where(...)`, `table.delete(...)`
    arrow: pc.Expression  # `dataset.to_table/scanner/count_rows(filter=...)`, `dataset.update`

    def __and__(self, other: Cond) -> Cond:
        return Cond(self.lance & other.lance, self.arrow & other.arrow)

    def __or__(self, other: Cond) -> Cond:
        return Cond(self.lance | other.lance, self.arrow | other.arrow)


def eq(column: str, value: Value) -> Cond:
    return Cond(col(column) == lit(value), pc.field(column) == pc.scalar(value))


def ne(column: str, value: Value) -> Cond:
    return Cond(col(column) != lit(value), pc.field(column) != pc.scalar(value))


def above(column: str, value: Value) -> Cond:
    return Cond(col(column) > lit(value), pc.field(column) > pc.scalar(value))


def at_least(column: str, value: Value) -> Cond:
    return Cond(col(column) >= lit(value), pc.field(column) >= pc.scalar(value))


def at_most(column: str, value: Value) -> Cond:
    return Cond(col(column) <= lit(value), pc.field(column) <= pc.scalar(value))


def user(user_id: str) -> Cond:
    return eq("user_id", user_id)


def stream(user_id: str, stream_id: str) -> Cond:
    return user(user_id) & eq("stream_id", stream_id)


def within(column: str, values: Iterable[str]) -> Cond:
    vals = list(values)
    if not vals:
        raise ValueError(f"empty IN list for {column}")
    return Cond(col(column).isin(vals), pc.field(column).isin(vals))


def user_in(user_id: str, column: str, values: Iterable[str]) -> Cond:
    return user(user_id) & within(column, values)


def seq_range(user_id: str, stream_id: str, after: int, upto: int) -> Cond:
    return stream(user_id, stream_id) & above("seq", after) & at_most("seq", upto)


def after(column: str, ts: datetime) -> Cond:
    """column > ts; an aware ts is compared in naive UTC, as the tables store it."""
    if ts.tzinfo is not None:
        ts = ts.astimezone(UTC).replace(tzinfo=None)
    return above(column, ts)
