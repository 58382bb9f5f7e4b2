"""Reading the raw log of many streams at once: one query for a whole wave of
a poll instead of one per stream.

Streams that want the same seq range (every stream on its first poll, most
streams of a steady workload) share one clause, `stream_id IN (...) AND seq
in (after, upto]`; the clauses are OR-ed, `GROUPS_PER_QUERY` to a query."""

from __future__ import annotations

from functools import reduce

from episodic.models import Turn
from storage import filters
from storage.raw import RawLog

GROUPS_PER_QUERY = 64
STREAMS_PER_GROUP = 1_000


def read_ranges(
    raw: RawLog, user_id: str, ranges: dict[str, tuple[int, int]]
) -> dict[str, list[Turn]]:
    """stream -> its turns with after < seq <= upto, in seq order, for
    `ranges` = {stream: (after, upto)} of one user."""
    out: dict[str, list[Turn]] = {s: [] for s in ranges}
    groups: dict[tuple[int, int], list[str]] = {}
    for s, (after, upto) in ranges.items():
        if upto > after:
            groups.setdefault((after, upto), []).append(s)
    clauses: list[tuple[filters.Cond, int]] = []
    for (after, upto), streams in groups.items():
        for i in range(0, len(streams), STREAMS_PER_GROUP):
            chunk = streams[i : i + STREAMS_PER_GROUP]
            seqs = filters.above("seq", after) & filters.at_most("seq", upto)
            clauses.append((filters.within("stream_id", chunk) & seqs, len(chunk) * (upto - after)))
    for i in range(0, len(clauses), GROUPS_PER_QUERY):
        part = clauses[i : i + GROUPS_PER_QUERY]
        cond = reduce(lambda a, b: a | b, (c for c, _ in part))
        rows = (
            raw.turns.search()
            .where((filters.user(user_id) & cond).lance)
            .limit(sum(n for _, n in part) + 1)
            .to_list()
        )
        for r in rows:
            t = RawLog._turn(r)
            out[t.stream_id].append(t)
    for turns in out.values():
        turns.sort(key=lambda t: t.seq)
    return out
