"""No condition reaches LanceDB as SQL text. lancedb's `Expr.to_sql()` left a
quote after a backslash unescaped and took `''` for an escaped quote, so a
user id or a path id ended the literal: another tenant's rows were read, and
one forget erased every user. Its `count_rows` takes text only, and its
`Table.update` renders an `Expr` as text; the storage layer uses pylance for
both (`Store.count`, `Store.update_where`). This test fails the day a call
that takes SQL text comes back."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("episodic", "storage", "tasks", "flows")


def _calls() -> Iterator[tuple[str, ast.Call]]:
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    yield f"{path.relative_to(ROOT).as_posix()}:{node.lineno}", node


def _arrow(node: ast.expr) -> bool:
    """`cond.arrow`: a condition's pyarrow form, which pylance binds."""
    return isinstance(node, ast.Attribute) and node.attr == "arrow"


def _text_first(call: ast.Call) -> bool:
    """One positional argument, and it is text (`Store.delete(name, cond)` has two)."""
    first = call.args[0] if len(call.args) == 1 else None
    return isinstance(first, ast.JoinedStr) or (
        isinstance(first, ast.Constant) and isinstance(first.value, str)
    )


def _route(call: ast.Call) -> bool:
    """`@app.delete("/v1/...")`: a FastAPI route, not a table."""
    receiver = call.func.value  # type: ignore[attr-defined]
    return isinstance(receiver, ast.Name) and receiver.id in ("app", "router")


def test_no_condition_is_rendered_or_passed_as_sql_text() -> None:
    found = []
    for where, call in _calls():
        name = call.func.attr  # type: ignore[attr-defined]
        if name == "to_sql":
            found.append(f"{where}: to_sql()")
        elif name == "count_rows" and not all(
            _arrow(a) for a in [*call.args, *(k.value for k in call.keywords)]
        ):
            found.append(f"{where}: count_rows with a filter (lancedb's takes SQL text)")
        elif name == "update" and not all(
            _arrow(k.value) for k in call.keywords if k.arg == "where"
        ):
            found.append(f"{where}: update(where=...) (lancedb's renders it as SQL text)")
        elif name in ("where", "delete") and _text_first(call) and not _route(call):
            found.append(f"{where}: {name} with SQL text")
    assert found == [], found


def test_the_store_counts_through_the_arrow_form() -> None:
    """The one place counts and updates are filtered: by `Cond.arrow`."""
    source = (ROOT / "storage" / "db.py").read_text()
    assert "count_rows(filter=cond.arrow)" in source
    assert "update(sets, where=cond.arrow)" in source
