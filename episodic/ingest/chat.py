"""The walk shared by chat-message formats (OpenAI, Anthropic).

A file holds messages directly (a list, `{"messages": [...]}`, or JSONL of
messages: one stream, named after the file) or several conversations (a list
of `{"messages": [...]}`, or JSONL of them: one stream each, named after the
file and the conversation's index, unless the conversation names its own).
A format supplies only `message_parts`: how one message becomes turn parts.

A request log writes the whole conversation again with every request. A
conversation whose system prompt and first messages repeat the whole of an
earlier one in the file (under the same explicit ids) continues it: it takes
that one's stream and positions, and only its new messages are read; the
repeated ones count as `skipped_repeated`. A turn's id comes from a message's
own `id` where it has one, otherwise from its stream, position and content.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from episodic.ingest.common import Context, check_tree, parse_ts, raw_of
from episodic.ingest.container import Record, records
from episodic.models import Rejected, TurnIn


@dataclass
class Part:
    """One turn's worth of a message, before the shared checks."""

    role: Any
    text: Any
    tool_call: bool = False
    is_error: bool | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Parts:
    parts: list[Part] = field(default_factory=list)
    dropped: int = 0  # blocks left out on purpose (thinking)
    error: str | None = None


PartsFn = Callable[[dict[str, Any]], Parts]
TS_KEYS = ("timestamp", "created_at", "created", "ts")


def message_role(msg: dict[str, Any]) -> tuple[str, str | None]:
    """A message's role, or why it has none that can be read."""
    role = msg.get("role")
    if role is None:
        return "", "missing field: role"
    if not isinstance(role, str):
        return "", f"role must be a string, got {type(role).__name__}"
    return role, None


def message_ts(msg: dict[str, Any]) -> Any:
    for key in TS_KEYS:
        if msg.get(key) is not None:
            return msg[key]
    return None


@dataclass
class _Where:
    """Where a message sits: for rejects, positions and default ids."""

    line_no: int
    raw: bytes | None  # None: cut the raw bytes out of the parsed value
    label: str | None
    position: str
    user_id: Any = None
    stream_id: Any = None
    default_stream: str | None = None


@dataclass(frozen=True)
class _Source:
    """Where a conversation's messages come from: their positions' prefix, the
    stream they default to, and the JSONL line holding them (None in a document,
    where each message counts as a line of its own)."""

    prefix: str
    default_stream: str
    line_no: int | None = None
    raw: bytes | None = None
    user_id: Any = None  # the conversation's own ids, once read
    stream_id: Any = None


class _Chains:
    """Which earlier conversation of a file a conversation repeats as its prefix."""

    def __init__(self) -> None:
        # digest of a whole conversation seen so far -> the root it belongs to
        self._roots: dict[bytes, int] = {}

    def follow(self, conv: dict[str, Any], messages: Sequence[Any], index: int) -> tuple[int, int]:
        """(root, messages already read) for the conversation at `index`.

        The root is the index of the first conversation of its chain: `index`
        itself, with nothing read, when no earlier one is a prefix of this one.
        """
        try:
            h = hashlib.sha256(_canonical([conv.get(k) for k in _SCOPE]))
            found, seen = self._roots.get(h.digest()), 0
            for i, msg in enumerate(messages, start=1):
                h.update(b"\x1e" + _canonical(msg))
                root = self._roots.get(h.digest())
                if root is not None:
                    found, seen = root, i
        except (TypeError, ValueError, RecursionError):
            return index, 0  # not comparable: read it as a conversation of its own
        root = index if found is None else found
        self._roots.setdefault(h.digest(), root)
        return root, seen


# what makes two requests the same conversation besides their messages
_SCOPE = ("user_id", "stream_id", "conversation_id", "id", "system")


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode("ascii")


def parse(ctx: Context, message_parts: PartsFn) -> Iterator[TurnIn | Rejected]:
    counter = [0]
    chains = _Chains()
    for rec in records(ctx):
        if isinstance(rec, Rejected):
            yield rec
        elif rec.whole:
            yield from _document(ctx, rec, message_parts, counter, chains)
        else:
            yield from _line(ctx, rec, message_parts, chains)


def _is_conversation(item: Any) -> bool:
    return isinstance(item, dict) and "messages" in item and "role" not in item


def _document(
    ctx: Context, rec: Record, fn: PartsFn, counter: list[int], chains: _Chains
) -> Iterator[TurnIn | Rejected]:
    value = rec.value
    if isinstance(value, dict) and "messages" in value:
        yield from _conversation(ctx, value, fn, counter, _Source("", ctx.stem))
    elif isinstance(value, list) and value and _is_conversation(value[0]):
        for i, conv in enumerate(value):
            if not _is_conversation(conv):
                counter[0] += 1
                yield ctx.reject(
                    counter[0],
                    raw_of(conv),
                    "expected a conversation {messages: [...]}",
                    label=f"conversation {i}",
                )
                continue
            root, seen = _follow(chains, conv, i)
            source = _Source(f"c{root}/", f"{ctx.stem}:{root}")
            yield from _conversation(ctx, conv, fn, counter, source, seen=seen)
    elif isinstance(value, list):
        yield from _messages(ctx, value, fn, counter, _Source("", ctx.stem))
    else:
        yield ctx.reject(
            1,
            raw_of(value)[: ctx.opts.max_line_bytes],
            'expected a list of messages or {"messages": [...]}',
            label="document",
        )


def _follow(chains: _Chains, conv: dict[str, Any], index: int) -> tuple[int, int | None]:
    """(root, messages already read, or None when this is a chain's first)."""
    messages = conv.get("messages")
    if not isinstance(messages, list):
        return index, None
    root, seen = chains.follow(conv, messages, index)
    return root, None if root == index else seen


def _line(ctx: Context, rec: Record, fn: PartsFn, chains: _Chains) -> Iterator[TurnIn | Rejected]:
    obj, n = rec.value, rec.line_no
    if _is_conversation(obj):
        root, seen = _follow(chains, obj, n)
        source = _Source(f"L{root}/", f"{ctx.stem}:{root}", n, rec.raw)
        yield from _conversation(ctx, obj, fn, [0], source, seen=seen)
    elif isinstance(obj, dict):
        where = _Where(n, rec.raw, None, f"L{n}", default_stream=ctx.stem)
        yield from _message(ctx, obj, fn, where)
    else:
        yield ctx.reject(
            n, rec.raw, f"expected a message or a conversation object, got {type(obj).__name__}"
        )


def _conversation(
    ctx: Context,
    conv: dict[str, Any],
    fn: PartsFn,
    counter: list[int],
    source: _Source,
    *,
    seen: int | None = None,
) -> Iterator[TurnIn | Rejected]:
    """`seen`: how many messages an earlier conversation of the chain gave
    (its system prompt too); None for the first of a chain."""
    stream_id = conv.get("stream_id") or conv.get("conversation_id") or conv.get("id")
    if isinstance(stream_id, int) and not isinstance(stream_id, bool):
        stream_id = str(stream_id)
    source = replace(source, user_id=conv.get("user_id"), stream_id=stream_id)
    line_no, raw = source.line_no, source.raw
    system = conv.get("system")
    if system and seen is not None:
        ctx.stats.skipped_repeated += 1
        if line_no is None:
            counter[0] += 1
    elif system:
        # Anthropic keeps the system prompt beside the messages, not among them
        text = system if isinstance(system, str) else _join_text_blocks(system)
        n = line_no or counter[0] + 1
        if line_no is None:
            counter[0] += 1
        yield ctx.turn(
            line_no=n,
            raw=raw if raw is not None else raw_of(system),
            position=f"{source.prefix}system",
            role="system",
            text=text,
            ts=message_ts(conv) or _first_ts(ctx, conv.get("messages")),
            user_id=source.user_id,
            stream_id=source.stream_id,
            default_stream=source.default_stream,
            label=None if line_no else f"message {n}",
        )
    messages = conv.get("messages")
    if not isinstance(messages, list):
        n = line_no or counter[0] + 1
        yield ctx.reject(
            n,
            raw if raw is not None else raw_of(conv)[: ctx.opts.max_line_bytes],
            f"messages must be a list, got {type(messages).__name__}",
        )
        return
    start = seen or 0
    ctx.stats.skipped_repeated += start
    if line_no is None:
        counter[0] += start
    yield from _messages(ctx, messages, fn, counter, source, start=start)


def _first_ts(ctx: Context, messages: Any) -> datetime | None:
    """The system prompt has no time of its own; it precedes the first message."""
    if isinstance(messages, list) and messages and isinstance(messages[0], dict):
        ts, _ = parse_ts(message_ts(messages[0]), ctx.opts.now)
        return ts
    return None


def _join_text_blocks(blocks: Any) -> Any:
    if not isinstance(blocks, list):
        return blocks
    texts = [b.get("text") for b in blocks if isinstance(b, dict)]
    return "\n\n".join(t for t in texts if isinstance(t, str)) or None


def _messages(
    ctx: Context,
    messages: list[Any],
    fn: PartsFn,
    counter: list[int],
    source: _Source,
    *,
    start: int = 0,
) -> Iterator[TurnIn | Rejected]:
    for i, msg in enumerate(messages[start:], start=start):
        if source.line_no is None:
            counter[0] += 1
            line_no, raw, label = counter[0], None, f"message {counter[0]}"
        else:
            line_no, raw = source.line_no, source.raw
            label = f"line {line_no}: message {i}"
        where = _Where(
            line_no,
            raw,
            label,
            f"{source.prefix}m{i}",
            source.user_id,
            source.stream_id,
            source.default_stream,
        )
        if not isinstance(msg, dict):
            yield ctx.reject(
                where.line_no,
                _raw(where, msg),
                f"message must be an object, got {type(msg).__name__}",
                label=where.label,
            )
            continue
        yield from _message(ctx, msg, fn, where)


def _raw(where: _Where, value: Any) -> bytes:
    return where.raw if where.raw is not None else raw_of(value)


def _message(
    ctx: Context, msg: dict[str, Any], fn: PartsFn, where: _Where
) -> Iterator[TurnIn | Rejected]:
    why = check_tree(msg) if where.raw is None else None  # JSONL lines were checked on decode
    if why is None:
        parts = fn(msg)
        why = parts.error
    if why is not None:
        yield ctx.reject(where.line_no, _raw(where, msg), why, label=where.label)
        return
    if not parts.parts:
        if parts.dropped:
            ctx.stats.skipped_other += 1
        else:
            yield ctx.reject(
                where.line_no, _raw(where, msg), "message has no content", label=where.label
            )
        return
    single = len(parts.parts) == 1
    own = msg.get("id") if isinstance(msg.get("id"), str) and msg["id"].strip() else None
    for k, part in enumerate(parts.parts):
        yield ctx.turn(
            line_no=where.line_no,
            raw=_raw(where, msg),
            position=where.position if single else f"{where.position}.{k}",
            native_id=None if own is None else own if single else f"{own}.{k}",
            role=part.role,
            text=part.text,
            ts=message_ts(msg),
            user_id=msg.get("user_id", where.user_id),
            stream_id=msg.get("stream_id", where.stream_id),
            default_stream=where.default_stream,
            tool_call=part.tool_call,
            is_error=part.is_error,
            meta=part.meta,
            label=where.label,
        )
