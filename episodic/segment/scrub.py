"""A forgotten turn's words out of a stream's saved detector. A checkpoint
keeps a few turns as text: the open episode's recent texts and summary (for
the judge), the feature window's texts and the turn held for its successor.
A forget replaces all of them when a forgotten turn may be among them; the
next turns are then scored against the tombstone's words, a small cost."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

# turns back from the last one fed whose text a detector may keep: the
# feature window (4), the held turn and the pending candidate, with room
WINDOW = 8
PARTS = ("open", "features", "pending")


def scrub(
    state: bytes, seqs: Iterable[int], turn_ids: Iterable[str], tombstone: str
) -> bytes | None:
    """`state` with every kept text replaced by `tombstone`, or None when
    none of the turns can be among the kept ones (older than the window and
    not in the open episode)."""
    st = json.loads(state)
    last = int(st.get("last_seq", -1))
    open_ids = set((st.get("open") or {}).get("turn_ids") or [])
    if not open_ids & set(turn_ids) and all(s < last - WINDOW for s in seqs):
        return None
    for part in PARTS:
        if isinstance(st.get(part), dict):
            _blank(st[part], tombstone)
    return json.dumps(st, allow_nan=False, separators=(",", ":")).encode("utf-8")


def _blank(node: dict[str, Any], tombstone: str) -> None:
    for k, v in node.items():
        if k == "text" and isinstance(v, str):
            node[k] = tombstone
        elif k == "texts" and isinstance(v, list):
            node[k] = [tombstone] * len(v)
        elif k == "summary" and isinstance(v, str):
            node[k] = None  # the open episode's running summary: none yet
        elif isinstance(v, dict):
            _blank(v, tombstone)
