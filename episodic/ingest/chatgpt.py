"""The ChatGPT data export: `conversations.json`, a list of conversations,
each a tree of messages in `mapping` (node id -> {message, parent, children}).

A regenerated answer or an edited question leaves branches; the conversation
as the user last saw it is the path from the root to `current_node`, and only
that path is read. One stream per conversation (its `conversation_id`, else
`id`); a message's own id names its turn. Hidden messages (the system prompt,
`is_visually_hidden_from_conversation`) and messages with no text are
skipped; non-text parts (images, files) leave a placeholder.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from episodic.ingest.common import Context, raw_of
from episodic.ingest.container import items
from episodic.models import Rejected, TurnIn

_SKIP_TYPES = ("user_editable_context", "model_editable_context", "tether_browsing_display")


def is_export(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("mapping"), dict)


def parse(ctx: Context) -> Iterator[TurnIn | Rejected]:
    for item in items(ctx, "conversation"):
        if isinstance(item, Rejected):
            yield item
            continue
        conv, label = item.value, item.label
        line_no = item.rec.line_no or item.index + 1
        if not is_export(conv):
            why = "not a conversation with a mapping"
            yield ctx.reject(line_no, raw_of(conv), why, label=label)
            continue
        yield from _conversation(ctx, conv, line_no, label)


def path_to_current(
    mapping: dict[str, Any], current: Any
) -> tuple[list[dict[str, Any]], str | None]:
    """The nodes from the root to `current` (the last leaf where it is missing), or a reason."""
    if not isinstance(current, str) or current not in mapping:
        leaves = [k for k, n in mapping.items() if isinstance(n, dict) and not n.get("children")]
        if not leaves:
            return [], "no current_node and no leaf"
        current = leaves[-1]
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    node_id: Any = current
    while isinstance(node_id, str) and node_id in mapping:
        if node_id in seen:
            return [], "the mapping has a cycle"
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            return [], f"node {node_id[:40]!r} is not an object"
        path.append(node)
        node_id = node.get("parent")
    path.reverse()
    return path, None


def _text(content: Any) -> str | None:
    if not isinstance(content, dict) or content.get("content_type") in _SKIP_TYPES:
        return None
    if isinstance(content.get("text"), str):  # code, execution_output
        return str(content["text"])
    parts = content.get("parts")
    if not isinstance(parts, list):
        return None
    pieces = []
    for p in parts:
        if isinstance(p, str):
            if p.strip():
                pieces.append(p)
        elif isinstance(p, dict):
            pieces.append(f"[{str(p.get('content_type') or 'attachment')[:40]}]")
    return "\n\n".join(pieces) if pieces else None


def _conversation(
    ctx: Context, conv: dict[str, Any], line_no: int, label: str
) -> Iterator[TurnIn | Rejected]:
    path, why = path_to_current(conv["mapping"], conv.get("current_node"))
    if why:
        yield ctx.reject(line_no, raw_of(conv)[: ctx.opts.max_line_bytes], why, label=label)
        return
    stream = conv.get("conversation_id") or conv.get("id")
    meta_base = {"title": conv["title"]} if isinstance(conv.get("title"), str) else {}
    for k, node in enumerate(path):
        msg = node.get("message")
        if not isinstance(msg, dict):
            continue  # the root, or a node without a message
        meta = msg.get("metadata")
        if isinstance(meta, dict) and meta.get("is_visually_hidden_from_conversation"):
            ctx.stats.skipped_other += 1
            continue
        text = _text(msg.get("content"))
        author = msg.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        if text is None or (role == "system" and not text.strip()):
            ctx.stats.skipped_other += 1
            continue
        mid = msg.get("id") or node.get("id")
        position = mid if isinstance(mid, str) and mid.strip() else f"n{k}"
        extra = dict(meta_base)
        if role == "tool" and isinstance(author, dict) and isinstance(author.get("name"), str):
            extra["name"] = author["name"]
        yield ctx.turn(
            line_no=line_no,
            raw=raw_of(msg),
            position=position,
            native_id=mid,
            role=role,
            text=text,
            ts=msg.get("create_time") or conv.get("create_time"),
            stream_id=stream if isinstance(stream, str) else None,
            meta=extra,
            label=f"{label} message {str(mid)[:40]}",
        )
