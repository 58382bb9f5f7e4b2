"""Generic JSONL: one turn a line, `{user_id, stream_id, role, text, ts, kind?, meta?, id?}`.

`ts` is ISO 8601 or epoch seconds; without it the turn gets the synthetic
clock. The default stream is the file stem. A turn's id comes from its stream,
line number and content (role, text, `ts`), never from the file's path.

`parse_objects` checks the same records arriving as JSON objects (the HTTP
API, the MCP `remember` tool): the one validator for both. There a record's
`id` (the client's turn id) names the turn; without one it is keyed by its
content and `ts` alone, so a retried batch maps to the same ids however it
is split.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from episodic.ingest.common import Context, Options, ParseStats, check_tree, raw_of
from episodic.ingest.container import each_line
from episodic.models import Rejected, TurnIn, stable_id


def parse(ctx: Context) -> Iterator[TurnIn | Rejected]:
    return each_line(
        ctx, lambda ctx, line_no, raw, obj: [record(ctx, line_no, raw, obj, f"L{line_no}")]
    )


def record(
    ctx: Context,
    line_no: int,
    raw: bytes,
    obj: Any,
    position: str | None,
    label: str | None = None,
    arrival: str = "",
) -> TurnIn | Rejected:
    """One generic record as a turn, or why not. A record's `id` names it on
    every path (files, capture, API, MCP). `position` None (objects, not
    lines): without an id, its content, or with no time either, its `arrival`."""
    if not isinstance(obj, dict):
        why = f"expected a JSON object, got {type(obj).__name__}"
        return ctx.reject(line_no, raw, why, label=label)

    def held_back(why: str) -> Rejected:
        # quarantined under the user and stream the record names, as a turn of it
        # would be stored (the caller's --user, or an API key's user, first)
        uid, bad = ctx.resolve_id("user_id", ctx.opts.user_id, obj.get("user_id"), "default")
        sid, bad_s = ctx.resolve_id("stream_id", ctx.opts.stream_id, obj.get("stream_id"), "")
        return ctx.reject(line_no, raw, why, "" if bad else uid, "" if bad_s else sid, label=label)

    if "role" not in obj:
        return held_back("missing field: role")
    meta = obj.get("meta")
    if meta is not None and not isinstance(meta, dict):
        return held_back(f"meta must be an object, got {type(meta).__name__}")
    native = obj.get("id")
    if isinstance(native, int) and not isinstance(native, bool):
        native = str(native)  # a numeric message id names the record as well
    if native is not None and not (isinstance(native, str) and 0 < len(native.strip()) <= 512):
        return held_back("id must be a non-blank string of at most 512 chars")
    text = obj.get("text", obj.get("content"))
    ts = obj.get("ts", obj.get("timestamp"))
    if position is None:
        content = "c:" + stable_id("record", json.dumps([obj.get("role"), text, ts], default=str))
        # with neither an id nor a time, only arrival tells a second "yes" from
        # the first: the receipt time and the place in its batch (a retry of
        # such a record is stored again; send an `id` to make retries safe)
        position = native or (content if ts not in (None, "") else f"{content}@{arrival}#{line_no}")
    return ctx.turn(
        line_no=line_no,
        raw=raw,
        position=position,
        native_id=native,
        role=obj["role"],
        text=text,
        ts=ts,
        user_id=obj.get("user_id"),
        stream_id=obj.get("stream_id"),
        kind=obj.get("kind"),
        meta=meta,
        label=label,
    )


def parse_objects(
    objs: Sequence[Any],
    *,
    user_id: str,
    source: str,
    now: datetime,
    default_stream: str = "api",
    max_turn_chars: int = 200_000,
) -> tuple[ParseStats, list[TurnIn | Rejected]]:
    """Records already decoded (one request's batch) as turns and rejects, in
    order; a Rejected's `line_no` is the record's index. `user_id` overrides
    any `user_id` a record names: the caller is the authority on the tenant."""
    stats = ParseStats(format="jsonl", total_bytes=0)
    opts = Options(user_id=user_id, stream_id=None, max_turn_chars=max_turn_chars, now=now)
    ctx = Context(Path(default_stream), opts, stats, source=source, clock=now)
    out: list[TurnIn | Rejected] = []
    for i, obj in enumerate(objs):
        raw = raw_of(obj)
        why = check_tree(obj)
        if why:
            out.append(ctx.reject(i, raw, why, user_id, label=f"item {i}"))
            continue
        item = record(ctx, i, raw, obj, None, label=f"item {i}", arrival=now.isoformat())
        if isinstance(item, Rejected) and not item.user_id:
            item = item.model_copy(update={"user_id": user_id})  # quarantined under the tenant
        out.append(item)
    return stats, out
