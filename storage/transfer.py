"""Export one user's memory as Parquet, import it into a store, same ids.

An export directory holds one `<table>.parquet` per table in
`storage.schemas.TABLES` (raw turns, stream heads, turn vectors, rejected
input, episodes, facts, fact history, reflections, segmenter checkpoints,
reflection marks), each sorted by the table's merge key, plus
`manifest.json` (user, vector width, row counts). Import merges each file on
its key (`merge_insert`): importing twice equals importing once, and an
export of the imported store equals the export it came from.

Errors:

    TransferError             the directory or its manifest is unusable
      ├─ DimensionMismatch    its vectors are not the store's width
      └─ ImportConflict       the store holds other raw turns for that user
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from storage import filters, schemas
from storage.db import Store
from storage.frames import frame
from storage.lease import user_lease

FORMAT = 1
MANIFEST = "manifest.json"


class TransferError(Exception):
    def __init__(self, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path


class DimensionMismatch(TransferError):
    def __init__(self, path: Path, exported: int, store: int) -> None:
        super().__init__(
            f"{path}: vectors are {exported} wide, this store's are {store} "
            "(set EPISODIC_EMBEDDER to the exporting store's embedder)",
            path,
        )
        self.exported = exported
        self.store = store


class ImportConflict(TransferError):
    def __init__(self, path: Path, user_id: str, extra: int) -> None:
        super().__init__(
            f"{path}: this store already holds {extra} raw turns of user {user_id!r} "
            "that the export does not; import into a store without that user",
            path,
        )
        self.user_id = user_id
        self.extra = extra


@dataclass(frozen=True)
class TransferReport:
    user_id: str
    path: str
    rows: dict[str, int] = field(default_factory=dict)  # per table: exported / in the files
    inserted: dict[str, int] = field(default_factory=dict)  # import only: new rows
    updated: dict[str, int] = field(default_factory=dict)  # import only: rows rewritten

    def as_dict(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "path": self.path,
            "rows": self.rows,
            "inserted": self.inserted,
            "updated": self.updated,
        }


def table_names() -> list[str]:
    return list(schemas.TABLES)


def key_of(table: str) -> str:
    return schemas.TABLES[table].key


def export_user(store: Store, user_id: str, out: Path) -> TransferReport:
    """Write every table's rows of `user_id` to `out` (created) as Parquet."""
    out.mkdir(parents=True, exist_ok=True)
    rows: dict[str, int] = {}
    for name in table_names():
        tbl = frame(store, name, user_id)
        tbl = tbl.select(store.table(name).schema.names).sort_by(key_of(name))
        pq.write_table(tbl, out / f"{name}.parquet")
        rows[name] = tbl.num_rows
    manifest = {
        "format": FORMAT,
        "user_id": user_id,
        "dim": store.dim,
        "exported_at": datetime.now(UTC).isoformat(),
        "tables": {name: {"key": key_of(name), "rows": n} for name, n in rows.items()},
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return TransferReport(user_id=user_id, path=str(out), rows=rows)


def read_manifest(src: Path) -> dict[str, Any]:
    path = src / MANIFEST
    try:
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise TransferError(
            f"{src}: no {MANIFEST} (not an `episodic export` directory)", src
        ) from e
    except (OSError, ValueError) as e:
        raise TransferError(f"{path}: unreadable manifest: {e}", path) from e
    if manifest.get("format") != FORMAT or not isinstance(manifest.get("user_id"), str):
        raise TransferError(f"{path}: not an export of format {FORMAT}", path)
    return manifest


def import_dir(store: Store, src: Path) -> TransferReport:
    """Merge an export into `store` on each table's key, under the user's lease."""
    manifest = read_manifest(src)
    user_id: str = manifest["user_id"]
    files = _read_files(store, src, user_id, int(manifest.get("dim", store.dim)))
    _check_raw(store, src, user_id, files.get("raw_turns"))
    rows: dict[str, int] = {}
    inserted: dict[str, int] = {}
    updated: dict[str, int] = {}
    with user_lease(store.uri, user_id):
        for name, data in files.items():
            rows[name] = data.num_rows
            if not data.num_rows:
                continue
            merge = store.table(name).merge_insert(key_of(name))
            res = merge.when_matched_update_all().when_not_matched_insert_all().execute(data)
            inserted[name] = int(res.num_inserted_rows)
            updated[name] = int(res.num_updated_rows)
    return TransferReport(user_id, str(src), rows, inserted, updated)


def _read_files(store: Store, src: Path, user_id: str, dim: int) -> dict[str, pa.Table]:
    """Each table's file, cast to the store's schema; all read before any write."""
    if dim != store.dim:
        raise DimensionMismatch(src, dim, store.dim)
    out: dict[str, pa.Table] = {}
    for name in table_names():
        path = src / f"{name}.parquet"
        if not path.exists():
            raise TransferError(f"{path}: missing (every table has a file, empty or not)", path)
        try:
            data = pq.read_table(path)
            data = data.select(store.table(name).schema.names).cast(store.table(name).schema)
        except (OSError, KeyError, ValueError, pa.ArrowException) as e:
            raise TransferError(f"{path}: does not match the {name} table: {e}", path) from e
        users = set(data["user_id"].to_pylist())
        if users - {user_id}:
            raise TransferError(f"{path}: rows of other users than {user_id!r}", path)
        out[name] = data
    return out


def _check_raw(store: Store, src: Path, user_id: str, raw: pa.Table | None) -> None:
    """Raw seqs are per stream: turns of this user the export lacks would
    collide with the imported seqs, so refuse rather than corrupt the log."""
    ids = set(raw["turn_id"].to_pylist()) if raw is not None else set()
    cond = filters.sql(filters.user(user_id))
    if store.table("raw_turns").count_rows(cond) == 0:
        return
    have = frame(store, "raw_turns", user_id, ["turn_id"])["turn_id"].to_pylist()
    extra = sum(1 for t in have if t not in ids)
    if extra:
        raise ImportConflict(src, user_id, extra)
