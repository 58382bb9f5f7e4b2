"""Shared machinery of the transcript parsers: reading, decoding, checking, emitting.

Every parser turns its records into calls on one `Context`, which owns the
rules that hold for all formats: ids filled or overridden, text cleaned and
bounded, timestamps checked, a synthetic clock where the source has none,
out-of-order flags, and a `Rejected` instead of an exception for bad content.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from episodic.ingest.kinds import derive_kind
from episodic.models import ROLES, TURN_KINDS, Rejected, TurnIn

MAX_DEPTH = 64
MAX_ID_CHARS = 512
# before 1970 or more than a day ahead of now is a broken clock, not an event
MIN_TS = datetime(1970, 1, 1, tzinfo=UTC)
FUTURE_SLACK = timedelta(days=1)
MAX_EPOCH = 253_402_300_799  # 9999-12-31T23:59:59Z, the last second a datetime holds

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_NEWLINES = re.compile(r"\r\n?")
_SURROGATE = re.compile(r"[\ud800-\udfff]")

ROLE_ALIASES = {
    "human": "user",
    "ai": "assistant",
    "model": "assistant",
    "bot": "assistant",
    "function": "tool",
    "developer": "system",
}


@dataclass
class ParseStats:
    """Live counts, updated while the parser's iterator is consumed."""

    format: str = ""
    turns: int = 0
    rejected: int = 0
    skipped_derived: int = 0  # compaction summaries: derived text never enters raw
    skipped_other: int = 0  # harness noise, thinking-only messages, non-turn entries
    skipped_repeated: int = 0  # messages a request log repeats from an earlier request
    skipped_blank: int = 0  # blank lines of a JSONL file
    bytes_read: int = 0
    total_bytes: int = 0
    first_reasons: list[str] = field(default_factory=list)

    @property
    def skipped(self) -> int:
        return (
            self.skipped_derived + self.skipped_other + self.skipped_repeated + self.skipped_blank
        )


@dataclass(frozen=True)
class Options:
    user_id: str | None
    stream_id: str | None
    max_turn_chars: int
    now: datetime
    # a slice of a growing file (capture): read from byte `start` (where line
    # `first_line` begins) up to byte `end` (a line boundary; None: the end)
    start: int = 0
    first_line: int = 1
    end: int | None = None

    @property
    def max_line_bytes(self) -> int:
        # room for a maximal turn written with \\uXXXX escapes, plus its envelope
        return 16 * self.max_turn_chars + (1 << 20)


def clean_text(s: str) -> str:
    """Strip C0 controls (keeping newline and tab); CR and CRLF become newline."""
    return _CONTROL.sub("", _NEWLINES.sub("\n", s))


def check_tree(obj: Any) -> str | None:
    """Why a decoded record is unsafe to keep (too deep, lone surrogates), or None."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"nesting deeper than {MAX_DEPTH} levels"
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return "invalid UTF-8 or lone surrogate in a string"
        elif isinstance(node, dict):
            for k, v in node.items():
                stack.append((k, depth + 1))
                stack.append((v, depth + 1))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
        elif isinstance(node, float) and not math.isfinite(node):
            return "NaN or Infinity in a number"
    return None


def decode_json(raw: bytes) -> tuple[Any, str | None]:
    """One JSON value from bytes: (value, None) or (None, a short reason)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"invalid UTF-8 at byte {e.start}"
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        return None, f"invalid JSON: {e.msg} at col {e.colno}"
    except ValueError as e:  # an integer literal past Python's digit limit
        return None, f"invalid JSON: {str(e)[:80]}"
    except RecursionError:
        return None, f"nesting deeper than {MAX_DEPTH} levels"
    reason = check_tree(obj)
    return (None, reason) if reason else (obj, None)


def raw_of(obj: Any) -> bytes:
    """Bytes to quarantine for a record cut out of a whole-JSON file."""
    try:
        return json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogateescape")
    except (UnicodeEncodeError, ValueError, RecursionError):
        try:
            return json.dumps(obj).encode("ascii")
        except (ValueError, RecursionError):
            return repr(obj).encode("utf-8", "backslashreplace")


def parse_ts(value: Any, now: datetime) -> tuple[datetime | None, str | None]:
    """(aware UTC datetime, None), (None, None) when absent, or (None, reason)."""
    if value is None or value == "":
        return None, None
    if isinstance(value, datetime):
        return _in_range(
            value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC), now
        )
    if isinstance(value, bool):
        return None, "timestamp must be ISO 8601 or epoch seconds, got a boolean"
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            try:
                ts = datetime.fromisoformat(value.strip())
            except ValueError:
                return None, f"timestamp {value[:40]!r} is not ISO 8601"
            try:
                ts = ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
            except OverflowError:
                return None, f"timestamp {value[:40]!r} is out of range"
            return _in_range(ts, now)
    if isinstance(value, int) and not -MAX_EPOCH <= value <= MAX_EPOCH:
        # compared as integers: a 309-digit one would overflow a float
        hint = " (milliseconds? expected seconds)" if 0 < value < 1000 * MAX_EPOCH else ""
        return None, f"epoch timestamp is out of range (past year 9999){hint}"
    if isinstance(value, int | float):
        if not math.isfinite(value):
            return None, "timestamp is not a finite number"
        try:
            ts = datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            hint = " (milliseconds? expected seconds)" if value > 1e11 else ""
            return None, f"epoch timestamp {value:.6g} is out of range{hint}"
        return _in_range(ts, now)
    return None, f"timestamp must be ISO 8601 or epoch seconds, got {type(value).__name__}"


def _in_range(ts: datetime, now: datetime) -> tuple[datetime | None, str | None]:
    if ts < MIN_TS:
        return None, f"timestamp {ts.isoformat()} is before 1970"
    if ts > now + FUTURE_SLACK:
        return None, f"timestamp {ts.isoformat()} is in the future"
    return ts, None


def iter_lines(
    path: Path, opts: Options, stats: ParseStats
) -> Iterator[tuple[int, bytes, str | None]]:
    """(line_no, raw bytes without the newline, reason if the line is over the cap).

    Reads in bounded pieces, so one endless line costs at most the cap in memory.
    """
    cap = opts.max_line_bytes
    with path.open("rb") as f:
        f.seek(opts.start)
        pos = opts.start
        line_no = opts.first_line - 1
        while True:
            room = cap + 1 if opts.end is None else min(cap + 1, opts.end - pos)
            chunk = f.readline(room) if room > 0 else b""
            if not chunk:
                return
            pos += len(chunk)
            line_no += 1
            stats.bytes_read += len(chunk)
            if line_no == 1 and chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]  # a UTF-8 byte order mark is not content
            if chunk.endswith(b"\n") or len(chunk) <= cap:
                yield line_no, chunk.rstrip(b"\n"), None
                continue
            # over the cap: keep the head as raw, drain the tail without holding it
            while True:
                rest = f.readline(1 << 20)
                pos += len(rest)
                stats.bytes_read += len(rest)
                if not rest or rest.endswith(b"\n"):
                    break
            reason = f"line is longer than {cap} bytes (raw kept: first {cap} bytes)"
            yield line_no, chunk[:cap], reason


class Context:
    """Per-file state that every parser shares: ids, clock, stats."""

    def __init__(
        self,
        path: Path,
        opts: Options,
        stats: ParseStats,
        *,
        source: str | None = None,
        clock: datetime | None = None,
    ) -> None:
        """`source` and `clock` serve input that is not a file (the HTTP API):
        the provenance to record and where synthetic times start (else the
        file's mtime)."""
        self.path = path
        # provenance only: ids never use it
        self.source = source if source is not None else str(path.resolve())
        self.stem = path.stem or "stream"  # default stream where the transcript names none
        self.opts = opts
        self.stats = stats
        self._latest: dict[tuple[str, str], datetime] = {}  # latest real time per stream
        self._synthetic: dict[tuple[str, str], datetime] = {}  # last synthetic time per stream
        self._asked: dict[tuple[str, str], bool] = {}  # did the agent's last words end in "?"
        if clock is not None:
            self._mtime = clock
            return
        try:
            mtime = path.stat().st_mtime
        except OSError:
            mtime = 0.0
        self._mtime = datetime.fromtimestamp(int(mtime), tz=UTC)

    def reject(
        self,
        line_no: int,
        raw: bytes,
        reason: str,
        user_id: str = "",
        stream_id: str = "",
        *,
        label: str | None = None,
    ) -> Rejected:
        """A refused record, quarantined under the user and stream it was sent
        for (the caller's `--user`/`--stream`, else the defaults a turn of it
        would have got); `label` names it where a line number would mislead."""
        self.stats.rejected += 1
        user_id = user_id or self.opts.user_id or "default"
        stream_id = stream_id or self.opts.stream_id or self.stem
        full = f"{label or f'line {line_no}'}: {reason}"
        if len(self.stats.first_reasons) < 10:
            self.stats.first_reasons.append(full)
        return Rejected(
            source=self.source,
            line_no=line_no,
            reason=full,
            raw=raw,
            user_id=user_id if isinstance(user_id, str) else "",
            stream_id=stream_id if isinstance(stream_id, str) else "",
        )

    def resolve_id(
        self, name: str, arg: str | None, value: Any, default: str
    ) -> tuple[str, str | None]:
        """The id to use (argument, then source, then default) or a reason it is unusable."""
        if arg is not None:
            value = arg
        elif value is None or value == "":
            value = default
        if not isinstance(value, str):
            return "", f"{name} must be a string, got {type(value).__name__}"
        if not value.strip():
            return "", f"{name} is blank"
        if len(value) > MAX_ID_CHARS:
            return "", f"{name} is longer than {MAX_ID_CHARS} chars"
        if _CONTROL.search(value) or "\n" in value or _SURROGATE.search(value):
            return "", f"{name} contains control characters"
        return value, None

    def turn(
        self,
        *,
        line_no: int,
        raw: bytes,
        position: str,
        role: Any,
        text: Any,
        ts: Any = None,
        native_id: Any = None,
        user_id: Any = None,
        stream_id: Any = None,
        default_stream: str | None = None,
        kind: Any = None,
        tool_call: bool = False,
        is_error: bool | None = None,
        meta: dict[str, Any] | None = None,
        label: str | None = None,
    ) -> TurnIn | Rejected:
        """Check and build one turn; any problem becomes a Rejected with a reason.

        `position` says where the turn sits in its stream's transcript and must
        not name the file; `native_id` is the transcript's own id for the turn,
        if it has one (anything but a non-blank string is ignored).
        """

        def reject(why: str, uid: str = "", sid: str = "") -> Rejected:
            return self.reject(line_no, raw, why, uid, sid, label=label)

        uid, why = self.resolve_id("user_id", self.opts.user_id, user_id, "default")
        if why:
            return reject(why)
        sid, why = self.resolve_id(
            "stream_id", self.opts.stream_id, stream_id, default_stream or self.stem
        )
        if why:
            return reject(why, uid)
        if not isinstance(role, str):
            return reject(f"role must be a string, got {type(role).__name__}", uid, sid)
        role = ROLE_ALIASES.get(role.strip().lower(), role.strip().lower())
        if role not in ROLES:
            return reject(f"role {role[:40]!r} is not one of {', '.join(ROLES)}", uid, sid)
        if text is None:
            return reject("missing field: text", uid, sid)
        if not isinstance(text, str):
            return reject(f"text must be a string, got {type(text).__name__}", uid, sid)
        cleaned = clean_text(text)
        if not cleaned.strip():
            return reject("text is empty or whitespace", uid, sid)
        if len(cleaned) > self.opts.max_turn_chars:
            limit = self.opts.max_turn_chars
            return reject(f"text is {len(cleaned):,} chars, over the limit of {limit:,}", uid, sid)
        if kind is not None and kind not in TURN_KINDS:
            return reject(f"kind {str(kind)[:40]!r} is not a known kind", uid, sid)
        event_ts, why = parse_ts(ts, self.opts.now)
        if why:
            return reject(why, uid, sid)
        meta = dict(meta or {})
        if cleaned != text:
            meta["sanitized"] = True
        key = (uid, sid)
        latest = self._latest.get(key)
        if event_ts is None:
            # synthetic times follow the last time seen; they never mark real ones out of order
            known = [t for t in (latest, self._synthetic.get(key)) if t is not None]
            event_ts = max(known) + timedelta(seconds=1) if known else self._mtime
            self._synthetic[key] = event_ts
            meta["synthetic_ts"] = True
        else:
            if latest is not None and event_ts < latest:
                meta["out_of_order"] = True
            if latest is None or event_ts > latest:
                self._latest[key] = event_ts
        asked = self._asked.get(key, False)
        if role in ("user", "assistant"):
            self._asked[key] = role == "assistant" and cleaned.rstrip().endswith("?")
        if kind is None:
            kind = derive_kind(
                role, cleaned, tool_call=tool_call, is_error=is_error, after_question=asked
            )
        try:
            turn = TurnIn(
                user_id=uid,
                stream_id=sid,
                role=role,
                kind=kind,
                text=cleaned,
                event_ts=event_ts,
                source=self.source,
                position=position,
                native_id=native_id if isinstance(native_id, str) and native_id.strip() else "",
                meta=meta,
            )
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            return reject(f"{where}: {first.get('msg', 'invalid')}", uid, sid)
        self.stats.turns += 1
        return turn


def json_lines(ctx: Context) -> Iterator[tuple[int, bytes, Any] | Rejected]:
    """Each non-blank line of a JSONL file as (line_no, raw, decoded value), or
    the Rejected that says why it could not be decoded."""
    for line_no, raw, too_long in iter_lines(ctx.path, ctx.opts, ctx.stats):
        if too_long:
            yield ctx.reject(line_no, raw, too_long)
            continue
        if not raw.strip():
            ctx.stats.skipped_blank += 1
            continue
        obj, why = decode_json(raw)
        if why:
            yield ctx.reject(line_no, raw, why)
            continue
        yield line_no, raw, obj
