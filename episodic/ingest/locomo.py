"""LoCoMo: long multi-session conversations between two speakers.

Each sample is one stream (its `sample_id`); each `session_N` list holds turns
`{speaker, dia_id, text, blip_caption?}` and `session_N_date_time` says when the
session began, in free text such as "1:56 pm on 8 May, 2023". Turns inside a
session are placed 30 s apart. speaker_a plays the user, speaker_b the
assistant; names, `dia_id` (the evaluation joins evidence on it) and image
captions go to meta. Sessions whose date key exists but hold no turns are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from episodic.ingest.common import Context, check_tree, raw_of
from episodic.ingest.container import items
from episodic.models import Rejected, TurnIn

TURN_GAP = timedelta(seconds=30)
EXAMPLE_DATE = "1:56 pm on 8 May, 2023"
_SESSION = re.compile(r"^session_(\d+)$")
_DATE = re.compile(
    r"^\s*(\d{1,2})(?::(\d{2}))?\s*([ap])\.?\s*m\.?\s*(?:on\s+)?(\d{1,2})(?:st|nd|rd|th)?\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*$",
    re.IGNORECASE,
)
_MONTHS = {
    m: i
    for i, name in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ),
        start=1,
    )
    for m in (name, name[:3], name[:4])
}


def parse_session_date(text: str) -> datetime | None:
    """'1:56 pm on 8 May, 2023' as aware UTC (the data set gives no zone), or None."""
    m = _DATE.match(text)
    if not m:
        return None
    hour, minute, ampm, day, month, year = m.groups()
    h, mi = int(hour), int(minute or 0)
    mon = _MONTHS.get(month.lower())
    if mon is None or not 1 <= h <= 12 or mi > 59:
        return None
    h = h % 12 + (12 if ampm.lower() == "p" else 0)
    try:
        return datetime(int(year), mon, int(day), h, mi, tzinfo=UTC)
    except ValueError:
        return None


def _sessions(conv: dict[str, Any]) -> list[int]:
    found = {int(m.group(1)) for k in conv if (m := _SESSION.match(k))}
    return sorted(found)


def parse(ctx: Context) -> Iterator[TurnIn | Rejected]:
    counter = [0]
    for item in items(ctx, "sample"):
        if isinstance(item, Rejected):
            yield item
            continue
        rec = item.rec  # a whole document's raw is empty: each sample's comes from raw_of
        yield from _sample(ctx, item.value, item.index, item.label, rec.raw, rec.line_no, counter)


def _sample(
    ctx: Context, sample: Any, index: int, label: str, raw: bytes, line_no: int, counter: list[int]
) -> Iterator[TurnIn | Rejected]:
    def reject(why: str, where: str = label, value: Any = sample) -> Rejected:
        n = line_no or counter[0] + 1
        if not line_no:
            counter[0] += 1
        return ctx.reject(n, raw or raw_of(value), why, label=where)

    conv = sample.get("conversation") if isinstance(sample, dict) else None
    if not isinstance(conv, dict):
        yield reject("expected a sample with a conversation object")
        return
    sample_id = sample.get("sample_id")
    stream = sample_id if isinstance(sample_id, str) and sample_id else f"{ctx.stem}:{index}"
    speakers = {conv.get("speaker_a"): "user", conv.get("speaker_b"): "assistant"}
    for n in _sessions(conv):
        turns = conv.get(f"session_{n}")
        if not turns:
            continue  # a date without content (conv-26 has several)
        where = f"{label} {stream}/session_{n}"
        if not isinstance(turns, list):
            yield reject(f"session_{n} must be a list, got {type(turns).__name__}", where, turns)
            continue
        date_text = conv.get(f"session_{n}_date_time")
        start = parse_session_date(date_text) if isinstance(date_text, str) else None
        shown = str(date_text)[:60]
        bad_date = f"session_{n}_date_time {shown!r} is not a date like {EXAMPLE_DATE!r}"
        for k, turn in enumerate(turns):
            here = f"{where}[{k}]"
            why = check_tree(turn)
            if why is None and not isinstance(turn, dict):
                why = f"turn must be an object, got {type(turn).__name__}"
            if why is not None or start is None:
                yield reject(why or bad_date, here, turn)
                continue
            yield _turn(
                ctx, turn, stream, speakers, start + k * TURN_GAP, n, here, raw, line_no, counter
            )


def _turn(
    ctx: Context,
    turn: dict[str, Any],
    stream: str,
    speakers: dict[Any, str],
    ts: datetime,
    session: int,
    label: str,
    raw: bytes,
    line_no: int,
    counter: list[int],
) -> TurnIn | Rejected:
    n = line_no or counter[0] + 1
    if not line_no:
        counter[0] += 1
    raw = raw or raw_of(turn)
    speaker, dia_id = turn.get("speaker"), turn.get("dia_id")
    role = speakers.get(speaker) if isinstance(speaker, str) else None
    if role is None:
        return ctx.reject(
            n, raw, f"speaker {str(speaker)[:40]!r} is neither speaker_a nor speaker_b", label=label
        )
    if not isinstance(dia_id, str) or not dia_id:
        return ctx.reject(n, raw, "missing field: dia_id", label=label)
    meta: dict[str, Any] = {"speaker": speaker, "dia_id": dia_id, "session": session}
    if isinstance(turn.get("blip_caption"), str):
        meta["blip_caption"] = turn["blip_caption"]
    return ctx.turn(
        line_no=n,
        raw=raw,
        position=f"{stream}/{dia_id}",
        native_id=dia_id,
        role=role,
        text=turn.get("text"),
        ts=ts,
        stream_id=stream,
        kind="assistant-answer" if role == "assistant" else None,
        meta=meta,
        label=label,
    )
