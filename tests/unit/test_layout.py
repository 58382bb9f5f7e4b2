"""Imports run one way, `adapters -> bench -> flows -> tasks -> service ->
storage -> pure core`, with no cycle between modules and nothing importing
deployments/ (DESIGN.md). Function-local imports count too: they are edges
all the same."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOPS = ("episodic", "storage", "tasks", "flows")
# the longest prefix decides: episodic.service sits above storage, episodic.adapters on top
LAYER: dict[str, float] = {
    "episodic": 0,
    "storage": 1,
    "episodic.service": 2,
    "tasks": 3,
    "flows": 4,
    # the Python face and the runners compose the flows: the bench uses them as users do
    "episodic.adapters.runners": 4.5,
    "episodic.adapters.embedded": 4.5,
    "episodic.bench": 5,
    "episodic.adapters": 6,
}


def _layer(mod: str) -> float:
    best = max((p for p in LAYER if mod == p or mod.startswith(p + ".")), key=len)
    return LAYER[best]


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    mods = {_module(p): p for top in TOPS for p in (ROOT / top).rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                if name.split(".")[0] == "deployments":
                    graph[mod].add(name)
                # the longest project module the name refers to
                while name and name not in mods:
                    name = name.rpartition(".")[0]
                if name and name != mod and not mod.startswith(name + "."):
                    graph[mod].add(name)
    return graph


# the package root hands out its Python face lazily (`from episodic import Memory`)
ROOT_FACE = ("episodic", "episodic.adapters.embedded")


def test_imports_point_down_the_layers() -> None:
    upward = [
        f"{m} -> {d}"
        for m, deps in _graph().items()
        for d in deps
        if d.split(".")[0] == "deployments" or _layer(d) > _layer(m) and (m, d) != ROOT_FACE
    ]
    assert upward == []


def test_no_import_cycles() -> None:
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d) :] + [d])
            elif d in graph and not state.get(d):
                visit(d, stack + [d])
        state[m] = 2

    for m in sorted(graph):
        if not state.get(m):
            visit(m, [m])
    assert cycles == []


@pytest.mark.parametrize("path", sorted((ROOT / "flows").glob("*.py")), ids=lambda p: p.name)
def test_flows_hold_only_flows(path: Path) -> None:
    if path.name == "__init__.py":
        return
    tree = ast.parse(path.read_text())
    flows = [
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        and any("flow" in ast.unparse(d) for d in n.decorator_list)
    ]
    assert flows, f"{path.name} defines no @flow"
