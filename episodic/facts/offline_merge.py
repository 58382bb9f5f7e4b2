"""The offline merge: what to do with a new fact, from its candidates alone.

For each new fact the candidates are tried in the order the store ranked
them, and the first rule that fires decides:

1. equal after `normalize`                          -> NOOP of that candidate
2. the new fact corrects its value ("User corrected
   Tbilisi to Yerevan", `correction`)               -> UPDATE of it (rewritten)
   the new fact negates or ends it (`is_negation_of`) -> DELETE of it
   the new fact says it replaces it ("X instead of
   Y", "now prefers X"; `replaced_candidate`)        -> UPDATE of it
   (a plan rescheduled: the plan, at its new time)
3. same slot (`slot_of`), different value, the new
   value exclusive (not "uses Rust" beside Python)   -> UPDATE of it (new text)
4. same slot, same value                            -> NOOP of it
5. cosine of the vectors >= dup_threshold           -> NOOP of it
6. none of the above for any candidate              -> ADD

Negation and slot come before the cosine test on purpose: "User no longer
lives in Paris" and "User lives in Paris" embed very close, and a
near-duplicate NOOP there would lose the ending.

The input is the merge context (plain lists, see `merge.merge_context`), so
the same function serves the offline provider and the fallback after a model
gave up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from episodic.facts.correction import corrected_fact
from episodic.facts.negation import is_negation_of
from episodic.facts.normalize import cosine, normalize
from episodic.facts.replacement import replaced_candidate, rescheduled_fact
from episodic.facts.slots import parse_slot
from episodic.facts.types import Event

DEFAULT_DUP_THRESHOLD = 0.95


def _vec(v: Sequence[float] | None) -> np.ndarray[Any, np.dtype[np.float64]] | None:
    return None if v is None else np.asarray(v, dtype=np.float64)


def merge_one(
    new_text: str,
    new_vector: Sequence[float] | None,
    candidates: Sequence[tuple[int, str, Sequence[float] | None]],
    *,
    dup_threshold: float = DEFAULT_DUP_THRESHOLD,
) -> tuple[Event, int | None]:
    """(event, candidate id or None) for one new fact; candidates are (id, text, vector)."""
    new_norm = normalize(new_text)
    new_slot = parse_slot(new_text)
    vec = _vec(new_vector)
    for cid, text, _ in candidates:
        if normalize(text) == new_norm:
            return "NOOP", cid
    for cid, text, _ in candidates:
        if is_negation_of(new_text, text):
            return "DELETE", cid
    for cid, text, _ in candidates:
        if corrected_fact(new_text, text) is not None:
            return "UPDATE", cid
    replaced = replaced_candidate(new_text, [text for _, text, _ in candidates])
    if replaced is not None:
        return "UPDATE", candidates[replaced][0]
    if new_slot is not None:
        for cid, text, _ in candidates:
            old_slot = parse_slot(text)
            if old_slot is not None and old_slot.slot == new_slot.slot:
                if old_slot.value == new_slot.value:
                    return "NOOP", cid
                if new_slot.exclusive:
                    return "UPDATE", cid
    for cid, text, cvec in candidates:
        sim = cosine(vec, _vec(cvec))
        if sim is not None and sim >= dup_threshold:
            # a near-duplicate that fills a different slot is not a duplicate
            old_slot = parse_slot(text)
            if new_slot is None or old_slot is None or old_slot.slot == new_slot.slot:
                return "NOOP", cid
    return "ADD", None


def offline_merge(context: dict[str, Any]) -> list[dict[str, Any]]:
    """One MergeItem-shaped dict per new fact of the merge context."""
    existing = context.get("existing", [])
    threshold = float(context.get("dup_threshold", DEFAULT_DUP_THRESHOLD))
    items: list[dict[str, Any]] = []
    for index, new in enumerate(context.get("new", []), start=1):
        candidates = [
            (cid, existing[cid - 1]["text"], existing[cid - 1].get("vector"))
            for cid in new.get("candidates", [])
        ]
        event, cid = merge_one(new["text"], new.get("vector"), candidates, dup_threshold=threshold)
        text = new["text"] if event in ("ADD", "UPDATE") else ""
        if event == "UPDATE" and cid is not None:
            # a correction rewrites the fact it corrects ("lives in Yerevan"), a
            # plan moved in time keeps what else it said ("with their boyfriend leo")
            old = existing[cid - 1]["text"]
            text = corrected_fact(new["text"], old) or rescheduled_fact(new["text"], old) or text
        items.append({"event": event, "id": cid, "text": text, "new_index": index})
    return items
