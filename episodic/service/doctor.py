"""`episodic doctor`: the invariants of the raw log and of segmentation,
checked per (user, stream) against what is stored.

- raw: seqs unique and contiguous from 0; the head row's `head_seq` is the
  max seq and its `n_turns` the row count. The head is derived data, so it is
  the one thing `repair` rewrites (under the append lock, from raw);
- segmentation: every turn at or below the checkpoint's watermark is in
  exactly one episode the checkpoint confirms (`last_seq <= last_closed_seq`)
  or in its open buffer; the watermark is not above the max seq;
- episodes: every turn id is stored in raw, the seqs of an episode's turns
  are exactly `first_seq..last_seq`, `n_turns == len(turn_ids)`, one episode
  per start;
- facts: no fact is active whose history closed it (an UPDATE or DELETE of
  it): the state a rolled-back import would leave.

Episodes written ahead of their checkpoint (a consolidate that died between
its two writes) are notes, not problems: the next run derives them again
under the same ids. Everything else is reported, never guessed at: raw is
immutable, and a turn that two rows share a seq with cannot be renumbered.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from storage.episodes import Episodes
from storage.facts import Facts
from storage.frames import frame
from storage.raw import RawLog, StreamHead, StreamKey, StreamStats, stream_stats_of
from storage.state import Checkpoint, Checkpoints

SAMPLE = 5
HEAD_KINDS = frozenset({"head_missing", "head_behind", "head_ahead", "head_count"})


@dataclass(frozen=True)
class Problem:
    user_id: str
    stream_id: str
    kind: str
    count: int
    detail: str
    sample: list[Any] = field(default_factory=list)

    @property
    def repairable(self) -> bool:
        return self.kind in HEAD_KINDS

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"repairable": self.repairable, "sample": self.sample[:SAMPLE]}


@dataclass
class DoctorReport:
    streams_checked: int = 0
    problems: list[Problem] = field(default_factory=list)
    notes: list[Problem] = field(default_factory=list)
    repaired: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "streams_checked": self.streams_checked,
            "problems": [p.as_dict() for p in self.problems],
            "repaired": self.repaired,
            "notes": [p.as_dict() for p in self.notes],
        }


@dataclass(frozen=True)
class Span:
    """An episode reduced to what the checks read."""

    episode_id: str
    first_seq: int
    last_seq: int
    turn_ids: tuple[str, ...]
    n_turns: int


def _rows(table: pa.Table, *names: str) -> Iterator[tuple[Any, ...]]:
    """The named columns of `table`, a tuple per row."""
    return zip(*(table[n].to_pylist() for n in names), strict=True)


class Repositories(Protocol):
    """The repositories the checks read (a `Runtime` is one)."""

    raw: RawLog
    checkpoints: Checkpoints
    episodes: Episodes
    facts: Facts


def run_doctor(
    repos: Repositories, user_id: str | None = None, *, repair: bool = False
) -> DoctorReport:
    """Check; with `repair`, rewrite the heads found wrong and check again
    (the report then lists what is still wrong and what was repaired)."""
    report = check_store(repos, user_id)
    users = sorted({p.user_id for p in report.problems if p.repairable})
    if not repair or not users:
        return report
    repaired = [r.as_dict() for u in users for r in repos.raw.repair_heads(u)]
    report = check_store(repos, user_id)
    report.repaired = repaired
    return report


def check_store(repos: Repositories, user_id: str | None = None) -> DoctorReport:
    """Read what the checks need (of one user, or all), then check each stream."""
    raw = repos.raw
    seqs = raw.seq_table(user_id)
    stats = stream_stats_of(seqs)
    turns: dict[StreamKey, dict[str, int]] = {}
    for tid, uid, sid, seq in _rows(seqs, "turn_id", "user_id", "stream_id", "seq"):
        turns.setdefault((uid, sid), {})[tid] = int(seq)
    heads = {(h.user_id, h.stream_id): h for h in raw.stored_heads(user_id)}
    cps = {(c.user_id, c.stream_id): c for c in repos.checkpoints.all(user_id)}
    spans: dict[StreamKey, list[Span]] = {}
    for r in repos.episodes.spans(user_id).to_pylist():
        spans.setdefault((r["user_id"], r["stream_id"]), []).append(
            Span(
                r["episode_id"],
                int(r["first_seq"]),
                int(r["last_seq"]),
                tuple(r["turn_ids"] or ()),
                int(r["n_turns"]),
            )
        )
    report = DoctorReport()
    for key in sorted(set(stats) | set(heads) | set(cps) | set(spans)):
        report.streams_checked += 1
        problems, notes = check_stream(
            key,
            stats.get(key),
            heads.get(key),
            cps.get(key),
            spans.get(key, []),
            turns.get(key, {}),
        )
        report.problems.extend(problems)
        report.notes.extend(notes)
    report.problems.extend(check_facts(repos.facts, user_id))
    return report


def check_facts(facts: Facts, user_id: str | None = None) -> list[Problem]:
    """Active facts whose own history closed them last (an UPDATE or DELETE
    of the fact after any ADD of it: a person's restore is an ADD)."""
    hist = frame(facts.store, "fact_history", user_id, ["user_id", "fact_id", "event", "at"])
    last: dict[tuple[str, str], tuple[Any, str]] = {}
    for u, f, e, at in _rows(hist, "user_id", "fact_id", "event", "at"):
        if e != "NOOP" and ((u, f) not in last or at >= last[(u, f)][0]):
            last[(u, f)] = (at, e)
    closed = {k for k, (_, e) in last.items() if e in ("UPDATE", "DELETE")}
    rows = frame(facts.store, "facts", user_id, ["user_id", "fact_id", "status"])
    bad: dict[str, list[str]] = {}
    for u, f, status in _rows(rows, "user_id", "fact_id", "status"):
        if status == "active" and (u, f) in closed:
            bad.setdefault(u, []).append(f)
    return [
        Problem(
            u,
            "",
            "fact_active_but_closed",
            len(ids),
            f"{len(ids)} facts are active although their history superseded or deleted them",
            sorted(ids),
        )
        for u, ids in sorted(bad.items())
    ]


def check_stream(
    key: StreamKey,
    stats: StreamStats | None,
    head: StreamHead | None,
    cp: Checkpoint | None,
    spans: list[Span],
    turns: dict[str, int],
) -> tuple[list[Problem], list[Problem]]:
    """The invariants of one stream; pure. `turns` maps its turn ids to seqs."""
    user_id, stream_id = key
    out: list[Problem] = []
    notes: list[Problem] = []

    def bad(kind: str, count: int, detail: str, sample: list[Any] | None = None) -> None:
        out.append(Problem(user_id, stream_id, kind, count, detail, sample or []))

    top = stats.max_seq if stats else -1
    rows = stats.rows if stats else 0
    # ---- raw and its head
    if stats and stats.seqs_twice:
        bad("duplicate_seqs", len(stats.seqs_twice), "seqs stored on two rows", stats.seqs_twice)
    if stats and stats.seqs_missing:
        bad("seq_gaps", len(stats.seqs_missing), "seqs missing below the max", stats.seqs_missing)
    if head is None:
        if rows:
            bad("head_missing", rows, f"{rows} raw rows and no head row")
    else:
        if head.head_seq < top:
            bad("head_behind", top - head.head_seq, f"head_seq {head.head_seq}, max seq {top}")
        elif head.head_seq > top:
            bad("head_ahead", head.head_seq - top, f"head_seq {head.head_seq}, max seq {top}")
        if head.n_turns != rows:
            bad("head_count", abs(head.n_turns - rows), f"n_turns {head.n_turns}, {rows} rows")
    # ---- episodes
    starts = Counter(s.first_seq for s in spans)
    twice = sorted(seq for seq, n in starts.items() if n > 1)
    if twice:
        bad("duplicate_episodes", len(twice), "two episodes start at the same seq", twice)
    for s in spans:
        missing = [t for t in s.turn_ids if t not in turns]
        if missing:
            bad("episode_turns_missing", len(missing), f"episode {s.episode_id}", missing)
        if s.n_turns != len(s.turn_ids) or not s.turn_ids:
            bad("episode_half_written", 1, f"episode {s.episode_id}: n_turns {s.n_turns}")
        got = sorted(turns[t] for t in s.turn_ids if t in turns)
        if not missing and got != list(range(s.first_seq, s.last_seq + 1)):
            bad("episode_seq_mismatch", 1, f"episode {s.episode_id}: {s.first_seq}..{s.last_seq}")
    # ---- segmentation: at or below the watermark, each turn exactly once
    if cp is None:
        if spans:
            bad("episodes_without_checkpoint", len(spans), "episodes but no checkpoint")
        return out, notes
    if cp.watermark > top:
        bad("watermark_ahead", cp.watermark - top, f"watermark {cp.watermark}, max seq {top}")
    confirmed: Counter[str] = Counter()
    ahead = [s for s in spans if s.last_seq > cp.last_closed_seq]
    for s in spans:
        if s.last_seq <= cp.last_closed_seq:
            confirmed.update(s.turn_ids)
    if ahead:
        notes.append(
            Problem(
                user_id,
                stream_id,
                "episodes_ahead_of_checkpoint",
                len(ahead),
                "written by a run that died before its checkpoint; the next run rewrites them",
                [s.episode_id for s in ahead],
            )
        )
    open_ids = set(cp.open_turn_ids)
    gone = sorted(open_ids - set(turns))
    if gone:
        bad("open_turns_missing", len(gone), "open buffer names turns not in raw", gone)
    lost: list[int] = []
    doubled: list[int] = []
    for tid, seq in turns.items():
        if seq > cp.watermark:
            continue
        n = confirmed[tid] + (tid in open_ids)
        if n == 0:
            lost.append(seq)
        elif n > 1:
            doubled.append(seq)
    if lost:
        bad("turns_in_no_episode", len(lost), "at or below the watermark", sorted(lost))
    if doubled:
        bad("turns_in_two_places", len(doubled), "episodes or open buffer", sorted(doubled))
    return out, notes
