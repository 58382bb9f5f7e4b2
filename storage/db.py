"""The store: one LanceDB connection and its tables, created on first use."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import lancedb
from lancedb.index import FTS, BTree
from lancedb.util import value_to_sql

from episodic.config import Settings, load_settings
from episodic.errors import ConfigError, storage_errno
from storage import filters, schemas
from storage.allocator import bound
from storage.codec import to_table
from storage.conflicts import on_conflict

log = logging.getLogger(__name__)

# scalar indexes that make per-user prefilters fast (BTree on user_id: ~10x)
SCALAR_INDEXES: dict[str, tuple[str, ...]] = {
    "raw_turns": ("user_id", "stream_id", "seq", "turn_id"),
    # user_id: the cosine channel's prefilter; without it a search reads every
    # user's vectors (12-18 s a query at 1M turns, docs/perf/notes.md)
    "turn_vectors": ("key", "user_id"),
    "episodes": ("user_id", "stream_id", "episode_id"),
    "facts": ("user_id", "fact_id"),
    "fact_history": ("user_id", "fact_id"),
    "reflections": ("user_id",),
    "segmenter_state": ("key",),
    "streams": ("key",),
}
# rows appended after an index was built are scanned by every lookup until
# folded in; a consolidation folds them once there are this many
FOLD_AT = 1000
IN_CHUNK = 1000  # values per IN list
DEFAULT_CACHE_MB: int = Settings.model_fields["lance_cache_mb"].default  # EPISODIC_LANCE_CACHE_MB
FTS_COLUMNS: dict[str, str] = {"episodes": "text", "facts": "text", "reflections": "text"}


# the connection's metadata cache, at most: it keeps the manifests of the
# versions read, and a consolidation commits thousands and reads only the
# newest; under a quarter of 512 MB it filled to 120 MB at 200k turns
# (docs/perf/notes.md, memory). The indexes keep their three quarters.
METADATA_CACHE_MB = 32


def connection_cache(cache_mb: int) -> tuple[int, int]:
    """(index, metadata) cache bytes of the connection's session, together
    at most `cache_mb` (EPISODIC_LANCE_CACHE_MB) MiB."""
    mib = 1024 * 1024
    return cache_mb * mib * 3 // 4, min(cache_mb * mib // 4, METADATA_CACHE_MB * mib)


class Store:
    """Opens tables lazily; every repository takes a Store."""

    def __init__(
        self,
        uri: str,
        dim: int = 384,
        cache_mb: int = DEFAULT_CACHE_MB,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        self.uri = uri
        self.dim = dim
        bound()  # glibc's large blocks mapped, not kept in its heaps (storage/allocator.py)
        remote = "://" in uri
        where = "EPISODIC_DB_URI" if remote else "EPISODIC_HOME (or EPISODIC_DB_URI)"
        if not remote:
            try:
                Path(uri).mkdir(parents=True, exist_ok=True)
            except OSError as e:
                if storage_errno(e) is not None:
                    raise  # full, read-only, not ours: the storage error it is
                raise ConfigError(where, f"cannot create the store at {uri}: {e.strerror}") from e
        # LanceDB's own defaults (6 GB of index cache, 1 GB of metadata) let a
        # long consolidation grow past 3 GB: every commit adds a version whose
        # metadata is cached. A bounded session keeps the process flat.
        self.cache_bytes = connection_cache(cache_mb)
        session = lancedb.Session(
            index_cache_size_bytes=self.cache_bytes[0],
            metadata_cache_size_bytes=self.cache_bytes[1],
        )
        # timedelta(0): every read sees other processes' committed writes (on
        # object storage that is one listing of _versions/ per read).
        # storage_options: the object store's endpoint, region... (never
        # credentials: LanceDB reads those from AWS_* itself). Concurrent
        # commits on S3 are safe through conditional PUT: docs/operate.md.
        try:
            self.db = lancedb.connect(
                uri,
                read_consistency_interval=timedelta(0),
                session=session,
                storage_options=dict(storage_options) if storage_options else None,
            )
        except (ValueError, OSError, RuntimeError) as e:
            if not remote or storage_errno(e) is not None:
                raise  # a local folder's failure is a storage error or a bug: seen whole
            # an endpoint down, no such bucket, an unknown scheme: LanceDB's
            # text ends in a Rust backtrace; its head says what went wrong
            head = str(e).split(", /")[0][:300]
            raise ConfigError(
                where, f"cannot open the store at {uri}: {head} (check EPISODIC_DB_STORAGE_OPTIONS)"
            ) from e
        self._tables: dict[str, Any] = {}
        self._cache_mb = cache_mb
        self._datasets: dict[str, Any] = {}  # table name -> pylance dataset (`dataset`)
        self._read_session: Any = None  # the datasets' one cache (`dataset`)

    def table(self, name: str) -> Any:
        """One of the schema's tables (`storage.schemas`)."""
        if name not in self._tables:
            return self.declared(name, schemas.schema(name, self.dim))
        return self._tables[name]

    def declared(self, name: str, schema: Any) -> Any:
        """A table whose repository declares its own schema (search documents,
        keys, receipts ...), created on first use and opened once."""
        if name not in self._tables:
            try:
                tbl = self.db.open_table(name)
            except (FileNotFoundError, ValueError):
                tbl = self.db.create_table(name, schema=schema, exist_ok=True)
            self._tables[name] = tbl
        return self._tables[name]

    def dataset(self, tbl: Any) -> Any:
        """The newest version of an open table as a pylance dataset. The
        search path reads through it: a query there costs a third to a half
        of the same query through lancedb's wrapper (3-6 ms vs 9-13 on a
        2-core VM). One dataset per table, moved to each new version, all on
        one bounded session, so the index and metadata caches carry over."""
        version = tbl.version  # read_consistency_interval=0: the newest commit
        ds = self._datasets.get(tbl.name)
        if ds is None:
            ds = tbl.to_lance(session=self._session())
        if ds.version != version:
            ds = ds.checkout_version(version)
        self._datasets[tbl.name] = ds
        return ds

    def _session(self) -> Any:
        """One cache for every dataset, a quarter of the connection's
        (EPISODIC_LANCE_CACHE_MB): the search reads a few indexes."""
        if self._read_session is None:
            import lance

            mib = 1024 * 1024
            self._read_session = lance.Session(  # type: ignore[attr-defined]
                index_cache_size_bytes=self._cache_mb * mib * 3 // 16,
                metadata_cache_size_bytes=self._cache_mb * mib // 16,
            )
        return self._read_session

    def table_names(self) -> list[str]:
        return list(schemas.TABLES)

    def existing_tables(self) -> list[str]:
        """Every table in the store: the schema's and the ones repositories
        declare themselves (search documents, keys, receipts, ledger ...)."""
        return sorted(set(self.db.list_tables().tables))

    def where_in(
        self,
        name: str,
        column: str,
        values: Iterable[str],
        *,
        user_id: str | None = None,
        columns: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """The rows of `name` whose `column` is in `values` (of one user when
        given), IN_CHUNK values to a query; at most one row per value."""
        vals = list(values)
        out: list[dict[str, Any]] = []
        for i in range(0, len(vals), IN_CHUNK):
            chunk = vals[i : i + IN_CHUNK]
            if user_id is None:
                cond = filters.within(column, chunk)
            else:
                cond = filters.user_in(user_id, column, chunk)
            out.extend(self.read(name, cond, columns))
        return out

    def read(
        self, name: str, cond: filters.Cond, columns: Sequence[str] | None = None
    ) -> list[dict[str, Any]]:
        """The rows of `name` matching `cond`,
        through the table's pylance dataset (`dataset`): an IN-list lookup on
        raw took 12 ms there, 33 through lancedb's query builder (30k turns
        in 89 fragments)."""
        cols = None if columns is None else list(columns)
        got = self.dataset(self.table(name)).to_table(filter=cond.arrow, columns=cols)
        return list(got.to_pylist())

    # ---- writes keyed on each table's merge key ---------------------------
    def _data(self, name: str, rows: Sequence[Mapping[str, Any]], columns: Any = None) -> Any:
        return to_table(name, rows, self.dim, columns=columns)

    def insert_new(self, name: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert the rows whose key is not stored yet; returns how many landed."""
        if not rows:
            return 0
        key = schemas.TABLES[name].key
        merge = self.table(name).merge_insert(key).when_not_matched_insert_all()
        return int(merge.execute(self._data(name, rows)).num_inserted_rows)

    def upsert(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert or replace whole rows by key."""
        if not rows:
            return
        key = schemas.TABLES[name].key
        merge = self._merge(name, key).when_matched_update_all()
        merge.when_not_matched_insert_all().execute(self._data(name, rows))

    def update_columns(self, name: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Overwrite the given columns of stored rows (the key plus those
        columns in each row); a row whose key is not stored is not created."""
        if not rows:
            return 0
        key = schemas.TABLES[name].key
        cols = [key, *sorted(c for c in rows[0] if c != key)]
        merge = self._merge(name, key).when_matched_update_all()
        return int(merge.execute(self._data(name, rows, cols))["num_updated_rows"])

    def rewrite_columns(self, name: str, user_id: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """`update_columns` for an erasure, of one user's rows: the whole
        stored rows are written again with the given columns changed. A
        column-only update leaves the old values in the fragment's first data
        file, which no compaction rewrites; a whole-row update deletes the old
        rows, so the next compaction (`storage.forget.purge_versions`) drops
        them from disk."""
        if not rows:
            return 0
        key = schemas.TABLES[name].key
        change = {str(r[key]): r for r in rows}
        cond = filters.user_in(user_id, key, list(change))
        stored = self.table(name).search().where(cond.lance).limit(None).to_arrow().to_pylist()
        whole = [{**r, **change[str(r[key])]} for r in stored]
        self.upsert(name, whole)
        return len(whole)

    def _merge(self, name: str, key: str) -> Any:
        """A merge on `key` into the newest version of a table, through pylance.
        An update of matched rows through lancedb's wrapper peaked 57-64 MB
        above the process for 200 rows of a 6,000-row episodes table; the same
        merge through pylance 8-10 MB, with the same commit (an Update that
        rewrites the rows) and the same retries on a conflicting commit
        (docs/perf/notes.md, memory). Each merge opens its own dataset on the
        shared session: a merge borrows its dataset mutably, and two threads
        merging through the one cached for reads panicked (PyBorrowMutError)."""
        return self.table(name).to_lance(session=self._session()).merge_insert(key)

    def open(self, name: str) -> Any:
        """A table of the schema, or another table of the store (the search's
        and the eval's derived tables)."""
        return self.table(name) if name in schemas.TABLES else self.db.open_table(name)

    def count(self, name: str, cond: filters.Cond | None = None) -> int:
        """Rows in a table (every user's), or those matching `cond`."""
        tbl = self.open(name)
        if cond is None:
            return int(tbl.count_rows())
        return int(self.dataset(tbl).count_rows(filter=cond.arrow))

    def delete(self, name: str, cond: filters.Cond) -> int:
        """Delete the rows matching `cond`; returns how many went."""
        if not self.count(name, cond):
            return 0  # a delete of nothing would still commit a version
        return int(self.open(name).delete(cond.lance).num_deleted_rows)

    def update_where(
        self,
        name: str,
        cond: filters.Cond,
        values: Mapping[str, Any] | None = None,
        values_sql: Mapping[str, str] | None = None,
    ) -> int:
        """Set columns of the rows matching `cond`: `values` as literals,
        `values_sql` as expressions of the row's own columns. Through pylance,
        which takes the condition as an arrow expression (lancedb's `update`
        renders it as SQL text); returns the rows updated."""
        sets = {k: value_to_sql(v) for k, v in (values or {}).items()} | dict(values_sql or {})
        ds = self.open(name).to_lance(session=self._session())
        return int(ds.update(sets, where=cond.arrow)["num_rows_updated"])

    def versions(self, name: str) -> int:
        """How many versions of a table are kept (each commit makes one)."""
        return len(self.table(name).list_versions())

    def fragments(self, name: str) -> int:
        """How many data fragments a table has (each small append adds one)."""
        return _fragments(self.table(name))

    @on_conflict  # a compaction loses to a concurrent update of its fragments
    def upkeep(self, name: str, keep_versions: timedelta, between: Any = None) -> dict[str, Any]:
        """Compact one table and drop versions older than `keep_versions`;
        rows, versions and fragments before and after. `between` runs just
        before the compaction (a crash point in tests)."""
        tbl = self.open(name)
        versions, frags = len(tbl.list_versions()), _fragments(tbl)
        if between is not None:
            between()
        tbl.optimize(cleanup_older_than=keep_versions)
        return {
            "rows": tbl.count_rows(),
            "versions": (versions, len(tbl.list_versions())),
            "fragments": (frags, _fragments(tbl)),
        }

    def owners(self, name: str, column: str, ids: Sequence[str]) -> dict[str, str]:
        """id -> user_id as stored, for the rows of `name` whose `column` is in
        `ids` (any user's: for checking who an id belongs to)."""
        if not ids:
            return {}
        rows = (
            self.table(name)
            .search()
            .where(filters.within(column, ids).lance)
            .select([column, "user_id"])
            .limit(10 * len(ids) + 1)  # facts keep several rows per id
            .to_list()
        )
        return {str(r[column]): str(r["user_id"]) for r in rows}

    def ensure_indexes(self) -> dict[str, list[str]]:
        """Scalar BTree indexes and FTS indexes; rebuilt cheaply by optimize()."""
        made = self.keep_scalar_indexes(fold_at=None)
        for name, fts in self._fts_indexes().items():
            made.setdefault(name, []).extend(fts)
        return made

    @on_conflict  # another process made the same first index: found made on retry
    def _fts_indexes(self) -> dict[str, list[str]]:
        made: dict[str, list[str]] = {}
        for name, column in FTS_COLUMNS.items():
            tbl = self.table(name)
            if tbl.count_rows() == 0:
                continue
            have = {tuple(ix.columns) for ix in tbl.list_indices()}
            if (column,) not in have:
                tbl.create_index(column, config=FTS(), replace=True)
                made.setdefault(name, []).append(f"fts:{column}")
        return made

    @on_conflict
    def keep_scalar_indexes(
        self, names: Iterable[str] = tuple(schemas.TABLES), fold_at: int | None = FOLD_AT
    ) -> dict[str, list[str]]:
        """The BTree indexes (`scalar_columns`) of tables `names`, made once a
        table has rows; with `fold_at`, the rows appended since folded into an
        index once there are that many. Without the key's index a merge joins
        the whole table: a 500-episode salience update at 200k turns peaked
        +80 MB and took 0.3 s; with it, 1 MB and 13 ms (docs/perf/notes.md)."""
        made: dict[str, list[str]] = {}
        for name in names:
            tbl = self.table(name)
            if tbl.count_rows() == 0:
                continue
            have = {ix.columns[0]: ix.name for ix in tbl.list_indices() if len(ix.columns) == 1}
            columns = scalar_columns(name)
            for column in columns:
                if column not in have:
                    tbl.create_index(column, config=BTree())
                    made.setdefault(name, []).append(column)
            if fold_at is None:
                continue
            stale = [have[c] for c in columns if c in have and _unindexed(tbl, have[c]) >= fold_at]
            if stale:  # its own dataset: the cached one is shared with reads
                tbl.to_lance(session=self._session()).optimize.optimize_indices(index_names=stale)
                made.setdefault(name, []).extend(f"folded:{n}" for n in stale)
        return made

    def has_fts(self, name: str) -> bool:
        column = FTS_COLUMNS[name]
        tbl = self.table(name)
        return any(
            tuple(ix.columns) == (column,) and str(ix.index_type).upper() == "FTS"
            for ix in tbl.list_indices()
        )


def scalar_columns(name: str) -> tuple[str, ...]:
    """The columns of `name` with a BTree index: its prefilters and its
    merge key (every insert-if-new, update and upsert joins on it)."""
    return tuple(dict.fromkeys((*SCALAR_INDEXES.get(name, ()), schemas.TABLES[name].key)))


def _unindexed(tbl: Any, index: str) -> int:
    stats = tbl.index_stats(index)
    return 0 if stats is None else int(stats.num_unindexed_rows)


def _fragments(tbl: Any) -> int:
    try:
        return int(tbl.stats()["fragment_stats"]["num_fragments"])
    except (AttributeError, TypeError, KeyError):
        return -1


def open_store(settings: Settings | None = None, dim: int = 384) -> Store:
    s = settings or load_settings()
    return Store(
        s.database_uri, dim=dim, cache_mb=s.lance_cache_mb, storage_options=s.db_storage_options
    )
