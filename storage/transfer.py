"""Export one user's memory as Parquet, import it into a store, same ids.

An export directory holds one `<table>.parquet` per table in
`storage.schemas.TABLES` (raw turns, stream heads, turn vectors, rejected
input, episodes, facts, fact history, reflections, segmenter checkpoints,
reflection marks), each sorted by the table's merge key, plus
`manifest.json` (user, vector width, row counts). Import merges each file on
its key (`merge_insert`): importing twice equals importing once, and an
export of the imported store equals the export it came from.

Import never crosses tenants and never moves a user's memory backwards;
every check runs before the first write, so a refused import writes nothing:

- a row whose key the store holds under another user is refused (an export
  whose ids were edited to another user's cannot overwrite that user);
- the store must hold nothing of the user that the export lacks (no raw
  turn, episode, fact, history row ...) and no checkpoint at a later version:
  a store that has moved on since the export is not rolled back to it. To
  replace a user's memory, forget the user first;
- duplicate keys, negative seqs and counts, and a malformed manifest are
  refused with one line saying which file and why.

Errors:

    TransferError             the directory, its manifest or a file is unusable
      ├─ DimensionMismatch    its vectors are not the store's width
      └─ ImportConflict       the store's rows of that user (or another's) conflict
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage import filters, schemas
from storage.db import Store
from storage.frames import frame
from storage.lease import user_lease

FORMAT = 1
MANIFEST = "manifest.json"
KEY_CHUNK = 5_000  # keys per IN list when looking for another user's rows
# columns that can never be negative in a store episodic wrote
NON_NEGATIVE = ("seq", "first_seq", "last_seq", "n_turns", "head_seq", "recall_count")


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
    def __init__(self, path: Path, user_id: str, extra: int, what: str = "") -> None:
        super().__init__(
            f"{path}: "
            + (
                what
                or f"this store already holds {extra} rows of user {user_id!r} that the export "
                "does not (the store has moved on since this export); import into a store "
                "without that user, or forget the user first"
            ),
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
        return asdict(self)


def table_names() -> list[str]:
    return list(schemas.TABLES)


def key_of(table: str) -> str:
    return schemas.TABLES[table].key


def export_user(store: Store, user_id: str, out: Path) -> TransferReport:
    """Write every table's rows of `user_id` to `out` (created) as Parquet.
    TransferError when `out` is a file or cannot be written."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / MANIFEST).touch()
    except OSError as e:
        raise TransferError(f"{out}: cannot write the export there ({e.strerror})", out) from e
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
        manifest: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise TransferError(
            f"{src}: no {MANIFEST} (not an `episodic export` directory)", src
        ) from e
    except (OSError, ValueError) as e:
        raise TransferError(f"{path}: unreadable manifest: {e}", path) from e
    if (
        not isinstance(manifest, dict)
        or manifest.get("format") != FORMAT
        or not isinstance(manifest.get("user_id"), str)
        or not manifest["user_id"]
        or type(manifest.get("dim", 0)) is not int
    ):
        raise TransferError(
            f"{path}: not an export of format {FORMAT} (format, user_id and dim)", path
        )
    return manifest


def import_dir(store: Store, src: Path) -> TransferReport:
    """Merge an export into `store` on each table's key, under the user's lease."""
    manifest = read_manifest(src)
    user_id: str = manifest["user_id"]
    files = _read_files(store, src, user_id, int(manifest.get("dim", store.dim)))
    rows: dict[str, int] = {}
    inserted: dict[str, int] = {}
    updated: dict[str, int] = {}
    with user_lease(store.uri, user_id):
        # checked under the lease: no consolidation of the user moves it meanwhile
        for name, data in files.items():
            _check_keys(store, src, name, user_id, data)
        _check_checkpoints(store, src, user_id, files["segmenter_state"])
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
        _check_values(path, name, data)
        out[name] = data
    return out


def _check_values(path: Path, name: str, data: pa.Table) -> None:
    """Duplicate keys and impossible values, refused before anything is written."""
    keys = data[key_of(name)]
    if len(pc.unique(keys)) != data.num_rows:
        raise TransferError(f"{path}: duplicate {key_of(name)} values", path)
    if keys.null_count:
        raise TransferError(f"{path}: empty {key_of(name)} values", path)
    for column in NON_NEGATIVE:
        if column in data.column_names:
            low = pc.min(data[column]).as_py()
            if low is not None and low < 0:
                raise TransferError(f"{path}: negative {column} ({low})", path)


def _check_keys(store: Store, src: Path, name: str, user_id: str, data: pa.Table) -> None:
    """Refuse keys that the store holds under another user, and rows of this
    user that the export lacks (the store has moved on since the export)."""
    key = key_of(name)
    mine = set(data[key].to_pylist())
    for i in range(0, len(mine), KEY_CHUNK):
        chunk = sorted(mine)[i : i + KEY_CHUNK]
        cond = filters.within(key, chunk) & filters.ne("user_id", user_id)
        foreign = store.count(name, cond)
        if foreign:
            raise ImportConflict(
                src,
                user_id,
                foreign,
                f"{name}: {foreign} rows whose {key} belongs to another user in this store; "
                "nothing was imported",
            )
    have = frame(store, name, user_id, [key])[key].to_pylist()
    extra = sum(1 for k in have if k not in mine)
    if extra:
        raise ImportConflict(src, user_id, extra)


def _check_checkpoints(store: Store, src: Path, user_id: str, data: pa.Table) -> None:
    """A checkpoint at a later version in the store than in the export means
    the store has consolidated past the export: refuse the rollback."""
    exported = dict(zip(data["key"].to_pylist(), data["version"].to_pylist(), strict=True))
    stored = frame(store, "segmenter_state", user_id, ["key", "version"])
    ahead = sum(
        1
        for k, v in zip(stored["key"].to_pylist(), stored["version"].to_pylist(), strict=True)
        if v > exported.get(k, -1)
    )
    if ahead:
        raise ImportConflict(src, user_id, ahead)
