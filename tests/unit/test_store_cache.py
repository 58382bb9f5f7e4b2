"""The connection's LanceDB caches stay within EPISODIC_LANCE_CACHE_MB, and
its metadata cache (old versions' manifests, which a consolidation never
reads again) within METADATA_CACHE_MB whatever the budget."""

from __future__ import annotations

from pathlib import Path

from storage.db import METADATA_CACHE_MB, Store, connection_cache

MIB = 1024 * 1024


def test_metadata_cache_is_capped_whatever_the_budget() -> None:
    assert connection_cache(16) == (12 * MIB, 4 * MIB)  # small budgets keep their quarter
    assert connection_cache(512) == (384 * MIB, METADATA_CACHE_MB * MIB)
    for mb in (16, 64, 512, 4096):
        index, metadata = connection_cache(mb)
        assert index + metadata <= mb * MIB and metadata <= METADATA_CACHE_MB * MIB


def test_a_store_opens_its_connection_with_those_caches(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "db"), cache_mb=512)
    assert store.cache_bytes == connection_cache(512)
