"""Defer LanceDB's REST namespace client until something uses it.

`import lancedb` imports `lance_namespace`, whose client package runs every
generated API module at import (pydantic-validated methods on nine REST APIs):
about half of lancedb's import time, for a REST catalog this project never
connects to. The package is registered without running its `__init__`;
submodules (`.models`, which `lance_namespace` does need) import as usual, and
the first attribute asked of the package itself runs the real `__init__`."""

from __future__ import annotations

import importlib.util
import sys

CLIENT = "lance_namespace_urllib3_client"


def defer() -> None:
    if CLIENT in sys.modules:
        return
    spec = importlib.util.find_spec(CLIENT)
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return  # not installed as a package: nothing to defer
    package = importlib.util.module_from_spec(spec)

    def load(name: str) -> object:
        # a PEP 562 hook: gone before the real __init__ runs, so later misses raise
        del package.__dict__["__getattr__"]
        assert spec.loader is not None
        spec.loader.exec_module(package)
        return getattr(package, name)

    package.__dict__["__getattr__"] = load
    sys.modules[CLIENT] = package


def loaded() -> bool:
    """Whether the client package's own `__init__` has run (for the tests)."""
    module = sys.modules.get(CLIENT)
    return module is not None and "__getattr__" not in module.__dict__
