"""No condition reaches LanceDB as SQL text. lancedb's `Expr.to_sql()` left a
quote after a backslash unescaped and took `''` for an escaped quote, so a
user id or a path id ended the literal: another tenant's rows were read, and
one forget erased every user. Its `count_rows` takes text only, its
`Table.update` and its plain-scan `to_pandas` render an `Expr` as text; the
storage layer binds conditions instead (`filters.Cond`: `.lance` for queries
and deletes, `.arrow` for pylance's scans, counts and updates). This test
fails the day a call that takes SQL text comes back."""

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


def _bound(node: ast.expr, form: str) -> bool:
    """`cond.lance` / `filters.user(u).arrow`: a condition's bound form."""
    return isinstance(node, ast.Attribute) and node.attr == form


def _integers_only(node: ast.expr) -> bool:
    """SQL text built from `int(...)` values alone (a version check)."""
    if isinstance(node, ast.Constant):
        return True
    return isinstance(node, ast.JoinedStr) and all(
        isinstance(v, ast.Constant)
        or (
            isinstance(v, ast.FormattedValue)
            and isinstance(v.value, ast.Call)
            and isinstance(v.value.func, ast.Name)
            and v.value.func.id == "int"
        )
        for v in node.values
    )


def _route(call: ast.Call) -> bool:
    """`@app.delete("/v1/...")`: a FastAPI route, not a table."""
    receiver = call.func.value  # type: ignore[attr-defined]
    return isinstance(receiver, ast.Name) and receiver.id in ("app", "router")


def _problem(call: ast.Call) -> str | None:
    name = call.func.attr  # type: ignore[attr-defined]
    keywords = {k.arg: k.value for k in call.keywords}
    if name in ("to_sql", "to_pandas", "to_polars"):
        return f"{name}() (lancedb renders the condition as SQL text)"
    if name == "count_rows" and not all(
        _bound(a, "arrow") for a in [*call.args, *keywords.values()]
    ):
        return "count_rows with a condition not bound as `.arrow`"
    if "filter" in keywords and not _bound(keywords["filter"], "arrow"):
        return "filter= not bound as `.arrow`"
    if name == "update" and "where" in keywords and not _bound(keywords["where"], "arrow"):
        return "update(where=) not bound as `.arrow`"
    if name == "when_matched_update_all" and "where" in keywords:
        return None if _integers_only(keywords["where"]) else "a merge condition with values"
    if name in ("where", "delete") and len(call.args) == 1 and not _route(call):
        return None if _bound(call.args[0], "lance") else f"{name} not bound as `.lance`"
    return None


def test_no_condition_is_rendered_or_passed_as_sql_text() -> None:
    found = [f"{where}: {p}" for where, call in _calls() if (p := _problem(call))]
    assert found == [], found


def test_the_guard_flags_each_way_text_could_come_back() -> None:
    text = [
        "tbl.search().where(f\"user_id = '{u}'\")",
        "tbl.search().where(cond)",
        "tbl.delete(sql)",
        "ds.to_table(filter=f\"user_id = '{u}'\")",
        "ds.scanner(filter=cond)",
        "tbl.count_rows(cond)",
        "tbl.update(where=cond, values={})",
        "m.when_matched_update_all(where=f\"target.user_id = '{u}'\")",
        "q.where(c.lance).to_pandas()",
        "c.to_sql()",
    ]
    bound = [
        "tbl.search().where(cond.lance)",
        "tbl.delete(filters.user(u).lance)",
        "ds.to_table(filter=cond.arrow)",
        "ds.count_rows(filter=cond.arrow)",
        "ds.update(sets, where=cond.arrow)",
        'm.when_matched_update_all(where=f"target.version = {int(v)}")',
        "store.delete(name, cond)",
        "np.where(x > 0, x, 1.0)",
    ]

    def flagged(src: str) -> bool:
        tree = ast.parse(src)
        return any(
            _problem(n)
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        )

    assert [s for s in text if not flagged(s)] == []
    assert [s for s in bound if flagged(s)] == []
