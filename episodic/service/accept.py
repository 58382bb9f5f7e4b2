"""Turns that arrive live (HTTP API, MCP `remember`, capture hooks): checked
by the one ingest validator, appended through a group commit, refusals
quarantined as file ingest does. Nothing is embedded here: consolidate does.

A group commit (`storage.group`): many threads call `GroupWriter.write`; one
of them appends everything queued so far in a single `RawLog.append` while
the others wait, so N concurrent batches cost about one LanceDB commit, not N
commits in turn under the append lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from episodic.ingest.common import raw_of
from episodic.ingest.jsonl import parse_objects
from episodic.models import Rejected, TurnIn, now_utc
from storage.group import GroupCommit
from storage.raw import RawLog

MAX_GROUP = 20_000  # turns per group append


@dataclass
class Outcome:
    accepted: int = 0
    duplicates: int = 0
    rejected: list[tuple[int, str]] = field(default_factory=list)
    turn_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted,
            "duplicates": self.duplicates,
            "rejected": [{"index": i, "reason": r} for i, r in self.rejected],
        }


class GroupWriter:
    def __init__(self, raw: RawLog, max_group: int = MAX_GROUP) -> None:
        self.raw = raw
        self._group: GroupCommit[list[TurnIn], tuple[int, int]] = GroupCommit(
            self._append, max_group
        )

    @property
    def appends(self) -> int:
        """Group appends made (the benchmark reports it)."""
        return self._group.commits

    def write(self, turns: list[TurnIn]) -> tuple[int, int]:
        """(accepted, duplicates) of `turns`, once they are committed to raw."""
        if not turns:
            return 0, 0
        return self._group.submit(turns, len(turns))

    def _append(self, batches: Sequence[list[TurnIn]]) -> list[tuple[int, int]]:
        result = self.raw.append([t for b in batches for t in b])
        fresh = set(result.turn_ids)
        out = []
        for b in batches:  # the first sender of a turn id gets it; later ones are duplicates
            accepted = 0
            for t in b:
                if t.turn_id in fresh:
                    fresh.discard(t.turn_id)
                    accepted += 1
            out.append((accepted, len(b) - accepted))
        return out


def accept(
    writer: GroupWriter,
    objs: Sequence[Any],
    *,
    user_id: str,
    source: str,
    max_turn_chars: int,
    now: datetime | None = None,
    default_stream: str = "api",
) -> Outcome:
    """Check, append and quarantine one batch of generic records for `user_id`."""
    _, items = parse_objects(
        objs,
        user_id=user_id,
        source=source,
        now=now or now_utc(),
        default_stream=default_stream,
        max_turn_chars=max_turn_chars,
    )
    turns, rejects = _one_text_per_id(writer.raw, user_id, list(objs), items)
    out = Outcome(rejected=[(r.line_no, r.reason) for r in rejects])
    out.accepted, out.duplicates = writer.write(turns)
    out.turn_ids = [t.turn_id for t in turns]
    if rejects:
        writer.raw.quarantine(rejects)
    return out


def _one_text_per_id(
    raw: RawLog, user_id: str, objs: list[Any], items: list[TurnIn | Rejected]
) -> tuple[list[TurnIn], list[Rejected]]:
    """The turns to write and the refusals, in order. A client id already used
    for other text (earlier in the batch, or stored) is a conflict, refused
    and quarantined, never counted as a duplicate of what it contradicts."""
    named = [t.turn_id for t in items if isinstance(t, TurnIn) and t.native_id]
    stored = {t.turn_id: t.text for t in raw.by_ids(user_id, named)} if named else {}
    turns: list[TurnIn] = []
    rejects: list[Rejected] = []
    for i, item in enumerate(items):
        if isinstance(item, Rejected):
            rejects.append(item)
            continue
        other = stored.get(item.turn_id)
        if other is not None and other != item.text:
            rejects.append(
                Rejected(
                    user_id=user_id,
                    stream_id=item.stream_id,
                    source=item.source,
                    line_no=i,
                    reason=f"item {i}: conflict: id {item.native_id[:80]!r} is already "
                    "stored with other text (kept, not replaced)",
                    raw=raw_of(objs[i]),
                )
            )
            continue
        if item.native_id:
            stored.setdefault(item.turn_id, item.text)
        turns.append(item)
    return turns, rejects
