"""One user's turns in memory, as the search reads them: each turn's position,
speaker and text (for the context returned around a hit), its search
document's terms (BM25) and its vector (cosine). Documents are built here from
the raw turns with `episodic.retrieval`'s rules (the turn's line, the run of
turns before it, the days it names), so a change of those rules applies to
every turn at once, old ones included."""

from __future__ import annotations

import json
from array import array
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa

from episodic.dense import Dense, best
from episodic.lexical import Bm25, tokens
from episodic.models import TOMBSTONE, now_utc
from episodic.retrieval import (
    CONTEXT_GAP_MINUTES,
    RUN_LINES,
    days_of,
    doc_before,
    hours_between,
    turn_doc,
    turn_line,
)
from storage.codec import to_aware

RAW_COLUMNS = ("turn_id", "stream_id", "seq", "role", "kind", "text", "event_ts", "meta")


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class TurnRow:
    """What the search returns of a turn."""

    turn_id: str
    stream_id: str
    seq: int
    speaker: str
    text: str
    event_ts: datetime


# the roles a question names as a party ("where does the user live"): their
# turns answer it (the user's "I moved to Berlin", not the agent's "grep -rn
# timezone", whose document holds the user's turn before it); "tool" and
# "system" are nouns of a question more often than its parties
PARTIES = frozenset({"user", "assistant"})


def _speaker(role: str, meta: dict[str, Any]) -> str:
    name = meta.get("speaker")
    return str(name) if isinstance(name, str) and name else role


def _matrix(chunk: Any) -> np.ndarray:
    """A chunk of a vector column as float32 rows, straight from Arrow: through
    Python lists a user's 10,000 vectors were 3.8 million float objects at once
    (+100 MB on a reflection's load); a chunk without nulls is not copied."""
    flat = chunk.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    rows: np.ndarray = flat.reshape(len(chunk), -1)
    return rows


def _meta(raw: Any) -> dict[str, Any]:
    try:
        out = json.loads(raw or "{}")
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


class TurnSet:
    def __init__(self, dim: int) -> None:
        self.rows: list[TurnRow] = []
        self._captions: dict[int, str] = {}  # position -> image caption, where one was sent
        self._pos: dict[str, int] = {}
        self._at: dict[tuple[str, int], int] = {}  # (stream, seq) -> position
        self.bm25 = Bm25()
        self.dense = Dense(dim)
        self._vector_of = array("i")  # dense row -> turn position
        self._row_at = array("i")  # turn position -> dense row, -1 without one
        self._micros = array("q")  # turn position -> event time, µs since the epoch
        # dense row -> the dense row of the turn just before / after it in its
        # stream (seq - 1 / seq + 1), -1 where that turn has none (`dense_top`)
        self._before = array("i")
        self._after = array("i")
        self._pending: dict[str, np.ndarray] = {}  # vectors of turns not yet read
        self.newest: datetime | None = None
        # who speaks in the turns, as a question names them: the people named
        # besides the role, and the parties of an agent's stream ("the user")
        self.speakers: set[str] = set()
        self._text_bytes = 0

    def __len__(self) -> int:
        return len(self.rows)

    def position(self, turn_id: str) -> int | None:
        return self._pos.get(turn_id)

    def add_raw(self, table: pa.Table) -> bool:
        """Add the turns of `table` not held yet. False when a held turn
        changed (a forget rewrote its text): the caller reads the user again."""
        fresh: list[dict[str, Any]] = []
        for r in table.to_pylist():
            at = self._pos.get(str(r["turn_id"]))
            if at is None:
                fresh.append(r)
            elif self.rows[at].text != r["text"]:
                return False
        fresh.sort(key=lambda r: (str(r["stream_id"]), int(r["seq"])))
        for r in fresh:
            self._add(r)
        held = [t for t in self._pending if t in self._pos]
        if held:
            self._attach(held, np.stack([self._pending.pop(t) for t in held]))
        return True

    def _add(self, r: dict[str, Any]) -> None:
        meta = _meta(r["meta"])
        cap = meta.get("blip_caption")
        ts = to_aware(r["event_ts"]) or now_utc()
        row = TurnRow(
            str(r["turn_id"]), str(r["stream_id"]), int(r["seq"]),
            _speaker(str(r["role"]), meta), str(r["text"]), ts,
        )  # fmt: skip
        at = len(self.rows)
        self.rows.append(row)
        self._row_at.append(-1)
        self._micros.append((ts - EPOCH) // MICROSECOND)
        self._text_bytes += len(row.text) + len(row.turn_id) + len(row.speaker) + 150
        if isinstance(cap, str) and cap:
            self._captions[at] = cap
        self._pos[row.turn_id] = at
        if row.speaker != str(r["role"]) or row.speaker in PARTIES:
            self.speakers.add(row.speaker)
        self._at[(row.stream_id, row.seq)] = at
        tool = str(r["role"]) == "tool" or str(r.get("kind") or "").startswith("tool-")
        if row.text == TOMBSTONE:  # forgotten: held for its place, never found
            self.bm25.add([])
        else:
            self.bm25.add(tokens(self.doc(at, tool)))
        if self.newest is None or ts > self.newest:
            self.newest = ts

    def doc(self, at: int, tool: bool = False) -> str:
        """The turn's search document (`retrieval.turn_doc`); a `tool` turn (a
        call or an output, not a reply to a person) without the turns before it."""
        row = self.rows[at]
        before = None if tool else doc_before(row.speaker, self._earlier(row))
        return turn_doc(self.line(at), before, days_of(row.text, row.event_ts))

    def _earlier(self, row: TurnRow) -> list[tuple[str, str]]:
        """The turns just before `row` in its stream, nearest first, while
        each is the seq just before the next and within the context gap."""
        out: list[tuple[str, str]] = []
        nxt = row
        while len(out) < RUN_LINES:
            at = self._at.get((row.stream_id, nxt.seq - 1))
            if at is None:
                break
            prev = self.rows[at]
            if hours_between(prev.event_ts, nxt.event_ts) * 60.0 > CONTEXT_GAP_MINUTES:
                break
            out.append((prev.speaker, self.line(at)))
            nxt = prev
        return out

    def line(self, at: int) -> str:
        """The turn's own line of its search document: speaker, text, image caption."""
        row = self.rows[at]
        return turn_line(row.speaker, row.text, self._captions.get(at))

    def add_vectors(self, table: pa.Table) -> None:
        """Attach the vectors of `table` (turn_id, vector) to their turns; a
        vector whose turn is not read yet waits for it."""
        self.dense.reserve(len(self.dense) + table.num_rows)
        for batch in table.to_batches():  # a batch at a time: no copy of the whole delta
            ids = [str(x) for x in batch.column("turn_id").to_pylist()]
            self._add_vectors(ids, _matrix(batch.column("vector")))

    def _add_vectors(self, ids: list[str], vecs: np.ndarray) -> None:
        known = []
        for i, t in enumerate(ids):
            if t in self._pos:
                known.append(i)
            else:
                self._pending[t] = vecs[i].copy()  # a view would keep the whole delta
        if len(known) == len(ids):
            self._attach(ids, vecs)
        else:
            self._attach([ids[i] for i in known], vecs[known])

    def _attach(self, ids: list[str], vecs: np.ndarray) -> None:
        """Rows of `vecs` for the turns `ids`, those without one yet, the last
        row of a turn named twice."""
        rows: dict[int, int] = {}  # position -> row of `vecs`
        for i, t in enumerate(ids):
            p = self._pos[t]
            if self._row_at[p] < 0:
                rows[p] = i
        if not rows:
            return
        take = np.fromiter(rows.values(), dtype=np.int64, count=len(rows))
        # every row in order (a first load): no copy before the dense matrix's own
        whole = len(take) == len(vecs) and bool((take == np.arange(len(vecs))).all())
        first = len(self.dense)
        self.dense.extend(vecs if whole else vecs[take])
        self._vector_of.extend(rows)
        self._before.extend([-1] * len(rows))
        self._after.extend([-1] * len(rows))
        for d, p in enumerate(rows, start=first):
            self._row_at[p] = d
        for d, p in enumerate(rows, start=first):
            self._link(p, d)

    def _link(self, at: int, d: int) -> None:
        """Join dense row `d` (turn `at`) to the rows of the turns on either side."""
        row = self.rows[at]
        before = self._at.get((row.stream_id, row.seq - 1))
        if before is not None and (b := self._row_at[before]) >= 0:
            self._before[d], self._after[b] = b, d
        after = self._at.get((row.stream_id, row.seq + 1))
        if after is not None and (a := self._row_at[after]) >= 0:
            self._after[d], self._before[a] = a, d

    def unembedded(self, recent: int) -> list[int]:
        """Positions of the user's `recent` newest turns (event time; the
        later read on a tie) that have no vector yet (written since their
        last consolidation), forgotten ones aside. Newest, not last read: a
        first read holds the streams in name order, so the newest turn of
        "chat-9" sits before every turn of "ops"."""
        row_at = np.frombuffer(self._row_at, dtype=np.intc)
        micros = np.frombuffer(self._micros, dtype=np.int64)
        # stable: of turns at one moment, the later read sorts last
        newest = np.argsort(micros, kind="stable")[-recent:] if (row_at < 0).any() else ()
        missing = [int(p) for p in newest if row_at[p] < 0]
        del row_at, micros  # the arrays may grow again once no view of them is held
        rows = self.rows
        return sorted(p for p in missing if rows[p].text != TOMBSTONE)

    def attach(self, positions: list[int], vecs: np.ndarray) -> None:
        """Vectors for the turns at `positions`, held here only: the stored
        vector, a function of the same text, takes nothing from them later."""
        self._attach([self.rows[p].turn_id for p in positions], vecs)

    def turn_of_vector(self, row: int) -> int:
        return int(self._vector_of[row])

    def dense_top(self, q: np.ndarray, k: int) -> tuple[list[tuple[int, float]], list[int]]:
        """The `k` turns nearest `q` by cosine, (position, cosine) best first;
        and the `k` nearest by the best cosine among the turn and the turns
        just before and after it in its stream (positions, best first:
        `retrieval.W_SPREAD`), from one product."""
        if not len(self.dense):
            return [], []
        c = self.dense.cosines(q)
        spread = c.copy()
        for side in (self._before, self._after):
            nb = np.frombuffer(side, dtype=np.intc)
            has = nb >= 0
            spread[has] = np.maximum(spread[has], c[nb[has]])
            del nb  # the array may grow again once no view of it is held
        near = [(self.turn_of_vector(i), s) for i, s in best(c, k)]
        return near, [self.turn_of_vector(i) for i, _ in best(spread, k)]

    def neighbours(self, at: int, n: int) -> list[int]:
        """Positions of the turns within `n` seqs of turn `at` in its stream, ascending."""
        row = self.rows[at]
        out = []
        for s in range(row.seq - n, row.seq + n + 1):
            p = self._at.get((row.stream_id, s))
            if p is not None:
                out.append(p)
        return out

    def nbytes(self) -> int:
        links = (len(self._row_at) + len(self._before) + len(self._after)) * self._row_at.itemsize
        return self._text_bytes + self.bm25.nbytes() + self.dense.nbytes() + links
