"""The store: one LanceDB connection and its tables, created on first use."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
from lancedb.index import FTS, BTree

from episodic.config import Settings, load_settings
from storage import schemas

log = logging.getLogger(__name__)

# scalar indexes that make per-user prefilters fast (BTree on user_id: ~10x)
SCALAR_INDEXES: dict[str, tuple[str, ...]] = {
    "raw_turns": ("user_id", "stream_id", "seq", "turn_id"),
    "turn_vectors": ("key",),
    "episodes": ("user_id", "stream_id", "episode_id"),
    "facts": ("user_id", "fact_id"),
    "fact_history": ("user_id", "fact_id"),
    "reflections": ("user_id",),
    "segmenter_state": ("key",),
    "streams": ("key",),
}
FTS_COLUMNS: dict[str, str] = {"episodes": "text", "facts": "text", "reflections": "text"}


class Store:
    """Opens tables lazily; every repository takes a Store."""

    def __init__(self, uri: str, dim: int = 384) -> None:
        self.uri = uri
        self.dim = dim
        if "://" not in uri:
            Path(uri).mkdir(parents=True, exist_ok=True)
        # timedelta(0): every read sees other processes' committed writes
        self.db = lancedb.connect(uri, read_consistency_interval=timedelta(0))
        self._tables: dict[str, Any] = {}
        self._schemas: dict[str, Callable[[], pa.Schema]] = {
            "raw_turns": schemas.raw_turns,
            "streams": schemas.streams,
            "turn_vectors": lambda: schemas.turn_vectors(dim),
            "rejected_input": schemas.rejected_input,
            "episodes": lambda: schemas.episodes(dim),
            "facts": lambda: schemas.facts(dim),
            "fact_history": schemas.fact_history,
            "reflections": lambda: schemas.reflections(dim),
            "segmenter_state": schemas.segmenter_state,
            "reflection_marks": schemas.reflection_marks,
        }

    def table(self, name: str) -> Any:
        if name not in self._tables:
            schema = self._schemas[name]()
            try:
                tbl = self.db.open_table(name)
            except (FileNotFoundError, ValueError):
                tbl = self.db.create_table(name, schema=schema, exist_ok=True)
            self._tables[name] = tbl
        return self._tables[name]

    def table_names(self) -> list[str]:
        return list(self._schemas)

    def ensure_indexes(self) -> dict[str, list[str]]:
        """Scalar BTree indexes and FTS indexes; rebuilt cheaply by optimize()."""
        made: dict[str, list[str]] = {}
        for name, cols in SCALAR_INDEXES.items():
            tbl = self.table(name)
            if tbl.count_rows() == 0:
                continue
            have = {tuple(ix.columns) for ix in tbl.list_indices()}
            for column in cols:
                if (column,) not in have:
                    tbl.create_index(column, config=BTree())
                    made.setdefault(name, []).append(column)
        for name, column in FTS_COLUMNS.items():
            tbl = self.table(name)
            if tbl.count_rows() == 0:
                continue
            have = {tuple(ix.columns) for ix in tbl.list_indices()}
            if (column,) not in have:
                tbl.create_index(column, config=FTS(), replace=True)
                made.setdefault(name, []).append(f"fts:{column}")
        return made

    def has_fts(self, name: str) -> bool:
        column = FTS_COLUMNS[name]
        tbl = self.table(name)
        return any(
            tuple(ix.columns) == (column,) and str(ix.index_type).upper() == "FTS"
            for ix in tbl.list_indices()
        )


def open_store(settings: Settings | None = None, dim: int = 384) -> Store:
    s = settings or load_settings()
    return Store(s.database_uri, dim=dim)
