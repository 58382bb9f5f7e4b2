"""One retrieval pipeline (issue 26): reciprocal-rank fusion is written once,
no second ranker is defined, and reflection, the demo and every face reach the
shipped search. Each test fails the day a second ranker appears."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("episodic", "storage", "tasks", "flows")
FUSION = ("episodic/retrieval.py", "rrf_scores")
# storage's two-channel wrapper over FUSION, named for what it fuses
RANKERS = {FUSION, ("storage/search.py", "fuse")}
# every place a query is ranked for someone: it must go through the shipped search
SHIPPED = {"search_memory", "search"}
CALLERS = (
    "episodic/service/evidence.py",  # reflection's evidence search
    "episodic/adapters/cli/demo.py",
    "episodic/adapters/cli/main.py",
    "episodic/adapters/http/app.py",
    "episodic/adapters/http/ui.py",
    "episodic/adapters/mcp/server.py",
    "episodic/bench/locomo_hybrid.py",
    "episodic/bench/current_truth.py",
)


def _functions() -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield path.relative_to(ROOT).as_posix(), node


def _is_rank_reciprocal(node: ast.AST) -> bool:
    """`w / (k + rank)`: a division by a sum that holds a rank or position."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
        return False
    den = node.right
    if not (isinstance(den, ast.BinOp) and isinstance(den.op, ast.Add)):
        return False
    names = {n.id for n in ast.walk(den) if isinstance(n, ast.Name)}
    return any("rank" in n or "pos" in n for n in names)


def test_reciprocal_rank_fusion_is_written_once() -> None:
    found = {
        (path, fn.name)
        for path, fn in _functions()
        if any(_is_rank_reciprocal(node) for node in ast.walk(fn))
    }
    assert found == {FUSION}, found


def test_no_second_ranker_is_defined() -> None:
    named = {
        (path, fn.name)
        for path, fn in _functions()
        if any(w in fn.name.lower() for w in ("rank", "fuse", "fusion", "rrf"))
        and not fn.name.startswith("test_")
    }
    assert named == RANKERS, named - RANKERS


def _calls(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            out.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
    return out


def test_reflection_the_demo_and_every_face_call_the_shipped_search() -> None:
    missing = [p for p in CALLERS if not (_calls(p) & SHIPPED)]
    assert not missing, missing


def test_the_fusion_ranks_by_weighted_reciprocal_rank() -> None:
    """The one fusion's arithmetic: an id first in both rankings beats one
    first in a single ranking; weights scale each ranking's share."""
    from episodic.retrieval import rrf_scores

    both, one = rrf_scores([["a", "b"], ["a", "c"]], k=60)[:2]
    assert both == ("a", 2 / 61)
    assert one[1] == 1 / 62
    weighted = dict(rrf_scores([["x"], ["y"]], k=1, weights=[3.0, 1.0]))
    assert weighted == {"x": 1.5, "y": 0.5}
