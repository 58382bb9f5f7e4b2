"""Parsers that turn transcript files into turns for the raw log.

    parse_file(path, fmt="auto")  ->  Iterator[TurnIn | Rejected]

Six formats: generic JSONL, OpenAI chat messages, Anthropic Messages, Claude
Code session transcripts, LoCoMo and the ChatGPT data export. Bad content never raises: each refused
record becomes a `Rejected` with its line, reason and raw bytes, and the rest
of the file is still read. `IngestError` means the file itself could not be
read, or its format could not be told. Compaction summaries are counted in
`ParseStats.skipped_derived` and yield nothing: derived text never enters raw.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from episodic.errors import IngestError
from episodic.ingest import anthropic_messages, chatgpt, claude_code, jsonl, locomo, openai_chat
from episodic.ingest.common import Context, Options, ParseStats
from episodic.ingest.detect import detect_format
from episodic.ingest.harness import make_turn
from episodic.models import Rejected, TurnIn, now_utc

__all__ = ["FORMATS", "ParseStats", "detect_format", "make_turn", "parse_file", "parse_with_stats"]

FORMATS = ("jsonl", "openai", "anthropic", "claude-code", "locomo", "chatgpt")

_PARSERS: dict[str, Callable[[Context], Iterator[TurnIn | Rejected]]] = {
    "jsonl": jsonl.parse,
    "openai": openai_chat.parse,
    "anthropic": anthropic_messages.parse,
    "claude-code": claude_code.parse,
    "locomo": locomo.parse,
    "chatgpt": chatgpt.parse,
}


def regular_file(path: Path) -> os.stat_result:
    """`path`'s stat when it is a regular file, else IngestError; by stat,
    which never blocks (opening a FIFO would wait for a writer)."""
    try:
        st = path.stat()
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        reason = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise IngestError(repr(str(path))[1:-1], f"cannot read: {reason}") from None
    if stat.S_ISDIR(st.st_mode):
        raise IngestError(str(path), "is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise IngestError(str(path), "not a regular file (a FIFO or a device)")
    return st


def parse_with_stats(
    path: Path,
    fmt: str = "auto",
    *,
    user_id: str | None = None,
    stream_id: str | None = None,
    max_turn_chars: int = 200_000,
    now: datetime | None = None,
    start: int = 0,
    first_line: int = 1,
    end: int | None = None,
) -> tuple[ParseStats, Iterator[TurnIn | Rejected]]:
    """The parser's iterator and the stats it fills as it is consumed.

    Checks run now: an unreadable file or an unknown format raises IngestError
    here, before any turn is produced. `now` bounds future timestamps.
    `start`, `first_line` and `end` read a slice of a line-per-record file
    (capture of a growing transcript): line numbers, and so turn ids, are
    those of the whole file.
    """
    path = Path(path)
    if fmt != "auto" and fmt not in FORMATS:
        raise IngestError(
            str(path), f"unknown format {fmt!r}; expected auto or one of {', '.join(FORMATS)}"
        )
    if max_turn_chars < 1:
        raise ValueError("max_turn_chars must be at least 1")
    st = regular_file(path)
    try:
        with path.open("rb"):
            pass
    except OSError as e:
        raise IngestError(str(path), f"cannot read: {e.strerror or e}") from e
    stats = ParseStats(total_bytes=st.st_size)
    if fmt == "auto":
        with path.open("rb") as f:
            empty = not f.read(1 << 16).strip()
        if empty:
            stats.format = "empty"
            return stats, iter(())
        fmt = detect_format(path)
    stats.format = fmt
    if start and fmt in ("locomo", "chatgpt"):
        raise IngestError(str(path), "a slice of a whole-JSON file cannot be parsed")
    opts = Options(
        user_id=user_id,
        stream_id=stream_id,
        max_turn_chars=max_turn_chars,
        now=now or now_utc(),
        start=start,
        first_line=first_line,
        end=end,
    )
    ctx = Context(path, opts, stats)
    return stats, _guarded(ctx, _PARSERS[fmt](ctx))


def _guarded(ctx: Context, it: Iterator[TurnIn | Rejected]) -> Iterator[TurnIn | Rejected]:
    """Turn an OSError in mid-read (disk gone, file truncated under us) into IngestError."""
    try:
        yield from it
    except OSError as e:
        raise IngestError(ctx.source, f"read failed: {e.strerror or e}") from e


def parse_file(path: Path, fmt: str = "auto", **options: Any) -> Iterator[TurnIn | Rejected]:
    """Parse one transcript file into turns and rejects, in source order
    (`options` as `parse_with_stats` takes them)."""
    return parse_with_stats(path, fmt, **options)[1]
