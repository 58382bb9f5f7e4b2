"""Shared fixtures: a real LanceDB in a temporary directory and Prefect's test
harness. Everything the tests write stays under one temporary home."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_HOME = Path(tempfile.mkdtemp(prefix="episodic-test-home-"))
os.environ.setdefault("EPISODIC_HOME", str(_HOME))
os.environ.setdefault("PREFECT_HOME", str(_HOME / "prefect"))
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("EPISODIC_EMBEDDER", "hash")
for _secret in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
    os.environ.pop(_secret, None)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def pytest_unconfigure(config: pytest.Config) -> None:
    """The run's temporary home goes with it (its Prefect database and the
    stores tests left there: tens of MB a run)."""
    import shutil

    shutil.rmtree(_HOME, ignore_errors=True)


@pytest.fixture(autouse=True)
def _close_memories() -> Iterator[None]:
    """The memories a test built (tests.integration.helpers.make_memory) end with it."""
    yield
    import sys

    helpers = sys.modules.get("tests.integration.helpers")
    if helpers is not None:
        helpers.MEMORIES.close()


@pytest.fixture(scope="session")
def onnx_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default embedder's int8 graph, exported once for the run (tens of
    seconds; tests/unit/test_embed_default_cosine.py exports its own)."""
    from episodic.embed.onnx import export_int8

    out = tmp_path_factory.mktemp("onnx")
    export_int8(out)
    return out


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "lancedb"


@pytest.fixture
def store(store_dir: Path):  # type: ignore[no-untyped-def]
    from storage.db import Store

    return Store(str(store_dir), dim=384)


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


def shared_data(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"public evaluation data not found at {path}")
    return path
