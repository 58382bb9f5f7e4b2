"""Generic JSONL: one turn a line, `{user_id, stream_id, role, text, ts, kind?, meta?}`.

`ts` is ISO 8601 or epoch seconds; without it the turn gets the synthetic
clock. The default stream is the file stem.
"""

from __future__ import annotations

from collections.abc import Iterator

from episodic.ingest.common import Context, decode_json, iter_lines
from episodic.models import Rejected, TurnIn


def parse(ctx: Context) -> Iterator[TurnIn | Rejected]:
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
        if not isinstance(obj, dict):
            yield ctx.reject(line_no, raw, f"expected a JSON object, got {type(obj).__name__}")
            continue
        if "role" not in obj:
            yield ctx.reject(line_no, raw, "missing field: role")
            continue
        meta = obj.get("meta")
        if meta is not None and not isinstance(meta, dict):
            yield ctx.reject(line_no, raw, f"meta must be an object, got {type(meta).__name__}")
            continue
        yield ctx.turn(
            line_no=line_no,
            raw=raw,
            position=f"L{line_no}",
            role=obj["role"],
            text=obj.get("text", obj.get("content")),
            ts=obj.get("ts", obj.get("timestamp")),
            user_id=obj.get("user_id"),
            stream_id=obj.get("stream_id"),
            kind=obj.get("kind"),
            meta=meta,
        )
