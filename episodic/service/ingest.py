"""Ingest one transcript into the raw log: parse in a stream, append in
batches, quarantine what was refused. Constant memory in the file's size."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from episodic.ingest import parse_with_stats
from episodic.models import Rejected, TurnIn
from storage.raw import AppendResult, RawLog

BATCH = 2_000
LISTED = 10_000  # rejected lines a report lists one by one (all are counted and kept)


@dataclass
class IngestReport:
    path: str
    format: str = ""
    accepted: int = 0
    duplicates: int = 0
    rejected: int = 0
    skipped_derived: int = 0
    first_reasons: list[str] = field(default_factory=list)
    streams: list[str] = field(default_factory=list)
    # (line number, reason) of each rejected line, the first LISTED of them
    rejects: list[tuple[int, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        del out["rejects"]  # shown as rejected_lines
        return out | {
            "first_reasons": self.first_reasons[:5],
            "rejected_lines": [{"line": n, "reason": r} for n, r in self.rejects],
        }


def ingest_file(
    raw: RawLog,
    path: Path,
    fmt: str = "auto",
    *,
    user_id: str | None = None,
    stream_id: str | None = None,
    max_turn_chars: int = 200_000,
    progress: Callable[[int, int], None] | None = None,
    batch: int = BATCH,
    window: tuple[int, int, int | None] = (0, 1, None),
) -> IngestReport:
    """`batch` turns per append: one commit each (smaller only to test crashes
    between appends without a large file). `window` (start byte, its line
    number, end byte) reads a slice of a growing file: what capture sends."""
    stats, items = parse_with_stats(
        Path(path),
        fmt,
        user_id=user_id,
        stream_id=stream_id,
        max_turn_chars=max_turn_chars,
        start=window[0],
        first_line=window[1],
        end=window[2],
    )
    report = IngestReport(path=str(path))
    total = AppendResult()
    turns: list[TurnIn] = []
    rejected: list[Rejected] = []
    streams: set[str] = set()

    def flush() -> None:
        if turns:
            total.merge(raw.append(turns))
            turns.clear()
        if rejected:
            raw.quarantine(rejected)
            rejected.clear()
        if progress:
            progress(stats.bytes_read, stats.total_bytes)

    for item in items:
        if isinstance(item, Rejected):
            rejected.append(item)
            report.rejected += 1
            if len(report.first_reasons) < 5:
                where = f"line {item.line_no}: "  # a reason names its line already, or a message
                reason = item.reason
                report.first_reasons.append(reason if reason.startswith(where) else where + reason)
            if len(report.rejects) < LISTED:
                report.rejects.append((item.line_no, item.reason))
        else:
            turns.append(item)
            streams.add(item.stream_id)
        if len(turns) >= batch or len(rejected) >= batch:
            flush()
    flush()
    report.format = stats.format
    report.accepted = total.accepted
    report.duplicates = total.duplicates
    report.skipped_derived = stats.skipped_derived
    report.streams = sorted(streams)
    return report
