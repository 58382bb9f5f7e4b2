"""Generic JSONL: one turn a line, `{user_id, stream_id, role, text, ts, kind?, meta?}`.

`ts` is ISO 8601 or epoch seconds; without it the turn gets the synthetic
clock. The default stream is the file stem. A turn's id comes from its
stream, line number and content (role, text, `ts`), never from the file's path.
"""

from __future__ import annotations

from collections.abc import Iterator

from episodic.ingest.common import Context, json_lines
from episodic.models import Rejected, TurnIn


def parse(ctx: Context) -> Iterator[TurnIn | Rejected]:
    for item in json_lines(ctx):
        if isinstance(item, Rejected):
            yield item
            continue
        line_no, raw, obj = item
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
