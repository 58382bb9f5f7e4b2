"""What the search shares with its readers: one fused hit (`Match`) and the
one fusion (`fuse`, weighted reciprocal rank); one read through a table's
dataset; the episodes holding some turns; a throwaway LanceDB full-text index
for the evaluation's baselines. The search itself ranks a user's working set
in memory (`episodic.service.search`).

User values only ever reach LanceDB as bound literals (`storage.filters`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from lancedb.index import FTS

from episodic.retrieval import RRF_K, W_DENSE, W_SPREAD, W_TEXT, rrf_scores
from storage import filters
from storage.db import Store


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
    spread_ids: Sequence[str] = (),
    w_spread: float = W_SPREAD,
) -> list[tuple[str, float]]:
    """The one RRF: sum of w / (k + rank) over the rankings, best first. With
    the turns' `spread_ids` (`retrieval.W_SPREAD`) as a third, scaled so that
    first in every ranking scores what first in the two does (`relevance`'s
    fixed scale). A ranking that found nothing (no query word is in any
    document) abstains: the others are scaled the same way, so a user whose
    facts share no word with the question is not held at half relevance."""
    rankings = ((text_ids, w_text), (dense_ids, w_dense), (spread_ids, w_spread))
    live = [(ids, w) for ids, w in rankings if ids]
    if not live:
        return []
    fused = rrf_scores([ids for ids, _ in live], k=k, weights=[w for _, w in live])
    total = sum(w for _, w in live)
    scale = (w_text + w_dense) / total if total > 0 else 1.0
    return fused if scale == 1.0 else [(i, s * scale) for i, s in fused]


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
        & filters.at_most("first_seq", hi)
        & filters.at_least("last_seq", lo)
    )
    rows = store.read(
        "episodes",
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
            # "overwrite" of a table not there yet makes lance warn on stderr
            there = self.name in self.store.db.list_tables().tables
            mode = "overwrite" if there else "create"
            self._tbl = self.store.db.create_table(self.name, data=data, mode=mode)
        else:
            self._tbl.add(data)
        self._tbl.create_index("text", config=FTS(), replace=True)

    def query(self, user_id: str, query: str, n: int) -> list[int]:
        if self._tbl is None or not query.strip():
            return []
        try:
            hits = (
                self._tbl.search(query, query_type="fts")
                .where(filters.user(user_id).lance, prefilter=True)
                .select(["unit", "_score"])
                .limit(n)
                .to_list()
            )
        except (ValueError, RuntimeError):
            return []
        return [int(h["unit"]) for h in hits]
