"""The one hybrid search: a full-text (BM25, LanceDB FTS) ranking and a vector
(cosine) ranking of one user's rows, fused once by weighted reciprocal rank.

Turns are searched through `turn_docs`, a derived table with one row per raw
turn: its text with the speaker and the turn before it in the same stream
(`episodic.retrieval.turn_doc`), the document BM25 sees. Their vectors stay in
`turn_vectors` (one embedding per turn, the one the segmenter uses). Facts and
reflections carry text and vector in their own tables.

User values only ever reach LanceDB as bound literals (`storage.filters`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from lancedb import col, lit
from lancedb.expr import Expr
from lancedb.index import FTS, BTree

from episodic.retrieval import RRF_K, W_DENSE, W_TEXT, rarer_terms, rrf_scores
from storage import filters
from storage.codec import to_naive
from storage.db import Store

TURN_DOCS = "turn_docs"


def turn_docs_schema() -> pa.Schema:
    return pa.schema(
        [
            ("turn_id", pa.string()),
            ("user_id", pa.string()),
            ("stream_id", pa.string()),
            ("seq", pa.int64()),
            ("event_ts", pa.timestamp("us")),
            ("doc", pa.string()),
        ]
    )


@dataclass(frozen=True, slots=True)
class Match:
    """One fused hit: its id, the fused score and the rank in each channel (0: absent)."""

    item_id: str
    rrf: float
    text_rank: int
    dense_rank: int
    cosine: float | None
    row: dict[str, Any] | None = field(default=None, compare=False)  # the columns asked for


def fuse(
    text_ids: Sequence[str],
    dense_ids: Sequence[str],
    *,
    w_text: float = W_TEXT,
    w_dense: float = W_DENSE,
    k: int = RRF_K,
) -> list[tuple[str, float]]:
    """The one RRF: sum of w / (k + rank) over the two rankings, best first."""
    return rrf_scores([text_ids, dense_ids], k=k, weights=[w_text, w_dense])


class TurnDocs:
    """The derived, append-only search documents of raw turns."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @property
    def table(self) -> Any:
        return self.store.declared(TURN_DOCS, turn_docs_schema())

    def count(self, user_id: str) -> int:
        return int(self.table.count_rows(filters.sql(filters.user(user_id))))

    def watermarks(self, user_id: str) -> dict[str, int]:
        """The highest seq with a document, per stream of the user, in one read."""
        rows = (
            self.table.search()
            .where(filters.user(user_id))
            .select(["stream_id", "seq"])
            .limit(None)
            .to_arrow()
        )
        if not rows.num_rows:
            return {}
        top = rows.group_by("stream_id").aggregate([("seq", "max")])
        return dict(
            zip(top["stream_id"].to_pylist(), map(int, top["seq_max"].to_pylist()), strict=True)
        )

    def put(self, rows: Sequence[dict[str, Any]]) -> int:
        """Append documents (idempotent on turn_id); index them for BM25."""
        if not rows:
            return 0
        data = pa.Table.from_pylist(
            [{**r, "event_ts": to_naive(r["event_ts"])} for r in rows], schema=turn_docs_schema()
        )
        (self.table.merge_insert("turn_id").when_not_matched_insert_all().execute(data))
        self.ensure_index()
        return len(rows)

    def ensure_index(self, attempts: int = 3) -> None:
        """FTS on `doc` and a BTree on `user_id`, once; later rows are searched
        unindexed until `optimize()` (the maintain flow) folds them in. Two
        users' first searches can make them at once (a consolidation's user
        threads): the index build that loses the commit is tried again, after
        looking whether the winner made it."""
        for column, config in (("doc", FTS()), ("user_id", BTree())):
            for attempt in range(attempts):
                if (column,) in {tuple(ix.columns) for ix in self.table.list_indices()}:
                    break
                try:
                    self.table.create_index(column, config=config, replace=True)
                    break
                except (RuntimeError, ValueError, OSError):  # a concurrent index commit won
                    if attempt == attempts - 1:
                        raise

    def by_ids(self, user_id: str, turn_ids: Sequence[str]) -> list[dict[str, Any]]:
        if not turn_ids:
            return []
        return read(
            self.store,
            self.table,
            filters.user_in(user_id, "turn_id", turn_ids),
            ["turn_id", "stream_id", "seq", "event_ts", "doc"],
            len(set(turn_ids)) + 1,
        )


def read(
    store: Store,
    tbl: Any,
    cond: Expr | str,
    columns: Sequence[str],
    limit: int | None = None,
    *,
    text: str | None = None,
    vector: tuple[str, np.ndarray] | None = None,
) -> list[dict[str, Any]]:
    """One read of the search path, through the table's pylance dataset
    (`Store.dataset`): the rows matching `cond`, or their BM25 top-`limit`
    for `text` (with `_score`), or their cosine top-`limit` for (column,
    vector) (with `_distance`). `cond` is an Expr of bound literals
    (rendered by `filters.sql`) or a string of constants and such renderings."""
    extra: dict[str, Any] = {}
    names = list(columns)
    if text is not None:
        extra = {"full_text_query": text, "prefilter": True}
        names.append("_score")
    elif vector is not None:
        column, q = vector
        k = limit or 1
        extra = {
            "nearest": {"column": column, "q": q, "k": k, "metric": "cosine"},
            "prefilter": True,
        }
        names.append("_distance")
    where = cond if isinstance(cond, str) else filters.sql(cond)
    got = store.dataset(tbl).to_table(filter=where, columns=names, limit=limit, **extra)
    return list(got.to_pylist())


def _text_rows(
    store: Store,
    tbl: Any,
    query: str,
    cond: Expr,
    id_column: str,
    n: int,
    columns: Sequence[str] = (),
) -> list[dict[str, Any]]:
    if not query.strip():
        return []
    try:
        return read(store, tbl, cond, [id_column, *columns], n, text=query)
    except (ValueError, RuntimeError):  # no FTS index yet, or a query it cannot parse
        return []


def _text_ids(store: Store, tbl: Any, query: str, cond: Expr, id_column: str, n: int) -> list[str]:
    return [str(h[id_column]) for h in _text_rows(store, tbl, query, cond, id_column, n)]


@dataclass(frozen=True, slots=True)
class Channel:
    """Where one ranking reads: a table, the rows it may see, the columns a hit carries."""

    table: str
    where: Expr
    columns: Sequence[str] = ()


def hybrid(
    store: Store,
    text: Channel,
    dense: Channel,
    id_column: str,
    query: str,
    qvec: np.ndarray,
    n: int,
    *,
    shared_terms_from: str | None = None,
) -> list[Match]:
    """BM25 top-n and cosine top-n of one kind of row, fused by the one RRF.
    Each hit carries the columns its channels were asked for (`Match.row`), so
    no second read fetches them. With `shared_terms_from` (a text column the
    cosine channel reads), query words that (nearly) every one of the user's
    nearest rows holds are left out of the BM25 query
    (`episodic.retrieval.rarer_terms`): "user" in every fact ranks nothing."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    ttbl = TurnDocs(store).table if text.table == TURN_DOCS else store.table(text.table)
    vtbl = store.table(dense.table)
    near = read(store, vtbl, dense.where, [id_column, *dense.columns], n, vector=("vector", qvec))
    if shared_terms_from is not None:
        query = rarer_terms(query, [str(r.get(shared_terms_from) or "") for r in near])
    lexical = _text_rows(store, ttbl, query, text.where, id_column, n, text.columns)
    rows: dict[str, dict[str, Any]] = {}
    for r in (*near, *lexical):  # the text channel's columns win: it may carry more
        rows.setdefault(str(r[id_column]), {}).update(r)
    cos = {str(h[id_column]): 1.0 - float(h.get("_distance", 1.0)) for h in near}
    text_ids = [str(h[id_column]) for h in lexical]
    dense_ids = [str(h[id_column]) for h in near]
    t_rank = {i: r for r, i in enumerate(text_ids, start=1)}
    d_rank = {i: r for r, i in enumerate(dense_ids, start=1)}
    return [
        Match(i, s, t_rank.get(i, 0), d_rank.get(i, 0), cos.get(i), rows[i])
        for i, s in fuse(text_ids, dense_ids)
    ]


TURN_COLUMNS = ("stream_id", "seq", "event_ts", "doc")


def search_turns(
    store: Store, user_id: str, model: str, query: str, qvec: np.ndarray, n: int
) -> list[Match]:
    """Hits on turn documents; a text hit's row carries `TURN_COLUMNS` (a
    cosine-only hit's row does not: turn_vectors holds no position)."""
    mine = filters.user(user_id)
    return hybrid(
        store,
        Channel(TURN_DOCS, mine, TURN_COLUMNS),
        Channel("turn_vectors", mine & filters.eq("model", model)),
        "turn_id",
        query,
        qvec,
        n,
    )


def search_table(
    store: Store,
    table: str,
    id_column: str,
    user_id: str,
    query: str,
    qvec: np.ndarray,
    n: int,
    status: str = "active",
    columns: Sequence[str] = (),
) -> list[Match]:
    """Facts or reflections: text and vector in the same table; each hit's
    row carries `columns`. The table's FTS index is made here when missing
    (`Store.ensure_fts`), whichever path wrote the rows."""
    store.ensure_fts(table)
    chan = Channel(table, filters.user(user_id) & filters.eq("status", status), columns)
    shared = "text" if "text" in columns else None
    return hybrid(store, chan, chan, id_column, query, qvec, n, shared_terms_from=shared)


def stale_facts(store: Store, user_id: str, limit: int = 2000) -> list[tuple[str, str | None]]:
    """The user's facts that are no longer true (superseded or deleted), each
    with the text of the active fact that replaced it (None: none did), in
    one read of the facts table."""
    rows = read(
        store,
        store.table("facts"),
        # constants only besides the bound user (lancedb's Expr has no IS NULL)
        f"{filters.sql(filters.user(user_id))} AND (status <> 'active' OR supersedes IS NOT NULL)",
        ["fact_id", "text", "status", "supersedes"],
        limit,
    )
    by_old = {
        str(r["supersedes"]): str(r["text"])
        for r in rows
        if r.get("supersedes") and r.get("status") == "active"
    }
    return [
        (str(r["text"]), by_old.get(str(r["fact_id"]))) for r in rows if r.get("status") != "active"
    ]


def episodes_holding(
    store: Store, user_id: str, seqs: Mapping[str, Sequence[int]]
) -> dict[tuple[str, int], dict[str, Any]]:
    """The episode holding each (stream, seq), in one read: the episodes of
    those streams that overlap the seqs' span, matched here."""
    want = {s: sorted(set(v)) for s, v in seqs.items() if v}
    if not want:
        return {}
    lo = min(v[0] for v in want.values())
    hi = max(v[-1] for v in want.values())
    cond = (
        filters.user_in(user_id, "stream_id", want)
        & (col("first_seq") <= lit(hi))
        & (col("last_seq") >= lit(lo))
    )
    rows = read(
        store,
        store.table("episodes"),
        cond,
        ["episode_id", "stream_id", "first_seq", "last_seq", "salience", "status"],
    )
    by_stream: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_stream.setdefault(str(r["stream_id"]), []).append(r)
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for stream_id, wanted in want.items():
        for s in wanted:
            for r in by_stream.get(stream_id, []):
                if int(r["first_seq"]) <= s <= int(r["last_seq"]):
                    out[(stream_id, s)] = r
                    break
    return out


class TextIndex:
    """A throwaway BM25 index of numbered texts per user (evaluation baselines:
    windows, sessions, episodes as documents), the same LanceDB FTS as turns."""

    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self.name = name
        self._tbl: Any = None

    def put(self, user_id: str, texts: Sequence[str]) -> None:
        data = pa.Table.from_pylist(
            [{"user_id": user_id, "unit": i, "text": t} for i, t in enumerate(texts)],
            schema=pa.schema(
                [("user_id", pa.string()), ("unit", pa.int64()), ("text", pa.string())]
            ),
        )
        if self._tbl is None:
            self._tbl = self.store.db.create_table(self.name, data=data, mode="overwrite")
        else:
            self._tbl.add(data)
        self._tbl.create_index("text", config=FTS(), replace=True)

    def query(self, user_id: str, query: str, n: int) -> list[int]:
        if self._tbl is None or not query.strip():
            return []
        try:
            hits = (
                self._tbl.search(query, query_type="fts")
                .where(filters.user(user_id), prefilter=True)
                .select(["unit", "_score"])
                .limit(n)
                .to_list()
            )
        except (ValueError, RuntimeError):
            return []
        return [int(h["unit"]) for h in hits]


def raw_at(
    store: Store, user_id: str, seqs: Mapping[str, Sequence[int]]
) -> dict[str, list[dict[str, Any]]]:
    """Raw rows (turn_id, seq, role, text, event_ts, meta) of some seqs of
    some streams, in one read; per stream, in seq order."""
    want = {s: sorted(set(int(x) for x in v)) for s, v in seqs.items() if v}
    if not want:
        return {}
    cond: Expr | None = None
    for stream_id, wanted in want.items():
        one = filters.eq("stream_id", stream_id) & col("seq").isin(wanted)
        cond = one if cond is None else cond | one
    assert cond is not None
    rows = read(
        store,
        store.table("raw_turns"),
        filters.user(user_id) & cond,
        ["turn_id", "stream_id", "seq", "role", "text", "event_ts", "meta"],
        sum(len(v) for v in want.values()) + 1,
    )
    out: dict[str, list[dict[str, Any]]] = {s: [] for s in want}
    for r in sorted(rows, key=lambda r: int(r["seq"])):
        out[str(r["stream_id"])].append(r)
    return out


def _dense(
    store: Store, tbl: Any, qvec: np.ndarray, column: str, cond: Expr, id_column: str, n: int
) -> list[tuple[str, float]]:
    return [
        (str(h[id_column]), 1.0 - float(h.get("_distance", 1.0)))
        for h in read(store, tbl, cond, [id_column], n, vector=(column, qvec))
    ]
