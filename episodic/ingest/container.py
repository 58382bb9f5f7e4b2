"""Records of a JSON-or-JSONL file: one whole document, or one value a line.

OpenAI, Anthropic and LoCoMo files come both ways. A file that opens with `[`
or whose first line is not a JSON value by itself is one document (loading it
whole is acceptable); otherwise it is JSONL and streams line by line. A whole
document that fails to parse falls back to JSONL when its first lines hold
objects of their own, so one corrupt first line does not sink a JSONL file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from episodic.ingest.common import Context, decode_json, json_lines
from episodic.models import Rejected, TurnIn

_SNIFF_LINES = 8


@dataclass(frozen=True)
class Record:
    line_no: int  # 0 for the whole document
    raw: bytes  # empty for the whole document: per-item raw comes from raw_of
    value: Any

    @property
    def whole(self) -> bool:
        return self.line_no == 0


@dataclass(frozen=True)
class Item:
    """One value of a record: a line's value, or one element of a list it holds."""

    value: Any
    index: int  # its place in the record's list (0 for a lone value)
    label: str  # where it is, for rejects
    rec: Record


def items(ctx: Context, noun: str) -> Iterator[Item | Rejected]:
    """Every value of the file, a list taken item by item; an item of a whole
    document is labelled `noun i`, one of a JSONL line `line N`."""
    for rec in records(ctx):
        if isinstance(rec, Rejected):
            yield rec
            continue
        values = rec.value if isinstance(rec.value, list) else [rec.value]
        for i, value in enumerate(values):
            yield Item(value, i, f"{noun} {i}" if rec.whole else f"line {rec.line_no}", rec)


LineHandler = Callable[[Context, int, bytes, Any], Iterable[TurnIn | Rejected]]


def each_line(ctx: Context, handle: LineHandler) -> Iterator[TurnIn | Rejected]:
    """A JSONL file's values through `handle` (with line number and raw line);
    a line that holds no JSON value passes on as rejected."""
    for item in json_lines(ctx):
        if isinstance(item, Rejected):
            yield item
        else:
            yield from handle(ctx, *item)


def _first_lines(ctx: Context) -> list[bytes]:
    lines: list[bytes] = []
    cap = ctx.opts.max_line_bytes
    with ctx.path.open("rb") as f:
        while len(lines) < _SNIFF_LINES:
            chunk = f.readline(cap + 1)
            if not chunk:
                break
            if not lines and chunk.startswith(b"\xef\xbb\xbf"):
                chunk = chunk[3:]
            if chunk.strip():
                lines.append(chunk.strip())
    return lines


def _is_object_line(raw: bytes) -> bool:
    obj, why = decode_json(raw)
    return why is None and isinstance(obj, dict)


def records(ctx: Context) -> Iterator[Record | Rejected]:
    lines = _first_lines(ctx)
    if not lines:
        return
    whole = lines[0].startswith(b"[") or not _is_object_line(lines[0])
    if whole:
        data = ctx.path.read_bytes()
        ctx.stats.bytes_read = len(data)
        # bad bytes inside strings survive as lone surrogates; each item is then
        # checked on its own, so one bad message does not sink the file
        text = data.decode("utf-8", "surrogateescape").lstrip("\ufeff")
        try:
            yield Record(0, b"", json.loads(text))
            return
        except RecursionError:
            yield ctx.reject(1, data[: ctx.opts.max_line_bytes], "invalid JSON: nesting too deep")
            return
        except json.JSONDecodeError as e:
            if not any(_is_object_line(raw) for raw in lines[1:]):
                where = f"at line {e.lineno} col {e.colno}"
                reason = f"invalid JSON: {e.msg} {where} (whole file quarantined)"
                yield ctx.reject(e.lineno, data[: ctx.opts.max_line_bytes], reason)
                return
            ctx.stats.bytes_read = 0
    for item in json_lines(ctx):
        yield item if isinstance(item, Rejected) else Record(*item)
