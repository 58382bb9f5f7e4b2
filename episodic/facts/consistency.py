"""Make the decisions of one episode agree with each other.

Each new fact is decided against the stored facts alone; inside one episode
they can still meet:

- two decisions UPDATE the same stored fact: the second updates the row the
  first created (a chain of supersession, nothing lost);
- a decision UPDATEs a fact an earlier one DELETEd: it becomes an ADD;
  a second DELETE of it is a NOOP;
- a DELETE of a fact an earlier one UPDATEd: it deletes the new row only if
  it ends that row too ("moved to Berlin" then "no longer lives in Paris"
  is a NOOP, Berlin stays);
- an ADD that ends, changes or repeats the row of an earlier new fact of the
  episode (`is_negation_of`, `names_replaced`, same slot) becomes a DELETE, UPDATE or NOOP of
  that row (`Decision.target_index`);
- a NOOP that repeats an earlier new fact points at the row that fact
  created or at the stored fact it matched;
- a NOOP of a stored fact an earlier decision changed or ended is the
  user's later word: an UPDATE of the new row when it sets the same slot to
  another value ("moved to Berlin", then "I live in Paris"), an ADD when
  the fact was ended, else a NOOP of the row that now carries it.

Every change here is decided by "rule" and carries a note.
"""

from __future__ import annotations

from dataclasses import replace

from episodic.facts.negation import is_negation_of
from episodic.facts.replacement import names_replaced
from episodic.facts.slots import parse_slot
from episodic.facts.types import Decision, Event

RULE = "rule"
Handle = tuple[str, str | int]  # ("fact", fact_id) or ("new", decision index)


class _Episode:
    def __init__(self) -> None:
        self._fate: dict[Handle, tuple[str, int]] = {}  # -> ("replaced"|"deleted", by index)
        self._texts: dict[Handle, str] = {}
        self.out: list[Decision] = []

    def alive(self, h: Handle) -> Handle | None:
        """The row that now carries `h`: itself, its latest successor, or None if deleted."""
        while h in self._fate:
            how, by = self._fate[h]
            if how == "deleted":
                return None
            h = ("new", by)
        return h

    @staticmethod
    def target(d: Decision) -> Handle | None:
        if d.target_fact_id is not None:
            return ("fact", d.target_fact_id)
        if d.target_index is not None:
            return ("new", d.target_index)
        return None

    def aim(self, d: Decision, h: Handle | None, event: Event, note: str) -> Decision:
        fact_id = h[1] if h is not None and h[0] == "fact" else None
        index = h[1] if h is not None and h[0] == "new" else None
        new_text = (d.new_text or d.new_fact.text) if event in ("ADD", "UPDATE") else None
        return replace(
            d,
            event=event,
            target_fact_id=fact_id if isinstance(fact_id, str) else None,
            target_index=index if isinstance(index, int) else None,
            new_text=new_text,
            old_text=self._texts.get(h, d.old_text) if h is not None else None,
            decided_by=RULE,
            note=note,
        )

    def add(self, d: Decision) -> None:
        i = len(self.out)
        h = self.target(d)
        if h is not None and h[0] == "fact":
            self._texts.setdefault(h, d.old_text or "")
        if d.event == "NOOP" and d.target_index is not None:
            d = self._repeat(d)
        elif d.event in ("UPDATE", "DELETE") and h is not None and h in self._fate:
            d = self._consumed(d, h)
        elif d.event == "NOOP" and h is not None and h in self._fate:
            d = self._restated(d, h)
        elif d.event == "ADD":
            d = self._meet_earlier_rows(d)
        self.out.append(d)
        h = self.target(d)
        if d.event in ("ADD", "UPDATE"):
            self._texts[("new", i)] = d.new_text or d.new_fact.text
        if h is not None and d.event == "UPDATE":
            self._fate[h] = ("replaced", i)
        elif h is not None and d.event == "DELETE":
            self._fate[h] = ("deleted", i)

    def _repeat(self, d: Decision) -> Decision:
        assert d.target_index is not None
        first = self.out[d.target_index]
        source = ("new", d.target_index) if first.event in ("ADD", "UPDATE") else self.target(first)
        if source is None:
            return d
        return self.aim(d, self.alive(source) or source, "NOOP", d.note)

    def _consumed(self, d: Decision, h: Handle) -> Decision:
        now = self.alive(h)
        if now is None:
            if d.event == "UPDATE":
                return self.aim(d, None, "ADD", "target already deleted in this episode")
            return self.aim(d, h, "NOOP", "target already deleted in this episode")
        if d.event == "UPDATE":
            if _same_value(d.new_text or d.new_fact.text, self._texts[now]):
                # a correction rewrote the fact, then the clause restated it
                return self.aim(d, now, "NOOP", "says what this episode already set")
            return self.aim(d, now, "UPDATE", "target already updated in this episode")
        if is_negation_of(d.new_fact.text, self._texts[now]):
            return self.aim(d, now, "DELETE", "target already updated in this episode")
        return self.aim(d, h, "NOOP", "target already updated in this episode")

    def _restated(self, d: Decision, h: Handle) -> Decision:
        """A NOOP of a stored fact that an earlier decision of this episode
        changed or ended: the new fact is the user's later word on it."""
        now = self.alive(h)
        if now is None:
            return self.aim(d, None, "ADD", "restates a fact ended earlier in this episode")
        new_slot, cur = parse_slot(d.new_fact.text), parse_slot(self._texts[now])
        if new_slot is not None and cur is not None and new_slot.slot == cur.slot:
            if new_slot.value != cur.value:
                return self.aim(d, now, "UPDATE", "changes back a fact of the same episode")
        return self.aim(d, now, "NOOP", "repeats a fact updated in this episode")

    def _meet_earlier_rows(self, d: Decision) -> Decision:
        new_slot = parse_slot(d.new_fact.text)
        for j in range(len(self.out) - 1, -1, -1):
            row: Handle = ("new", j)
            if self.out[j].event not in ("ADD", "UPDATE") or self.alive(row) != row:
                continue
            text = self._texts[row]
            if is_negation_of(d.new_fact.text, text):
                return self.aim(d, row, "DELETE", "ends a fact of the same episode")
            if names_replaced(d.new_fact.text, text):
                return self.aim(d, row, "UPDATE", "replaces a fact of the same episode")
            old_slot = parse_slot(text)
            if new_slot is not None and old_slot is not None and old_slot.slot == new_slot.slot:
                if old_slot.value == new_slot.value:
                    return self.aim(d, row, "NOOP", "same as a fact of the same episode")
                return self.aim(d, row, "UPDATE", "changes a fact of the same episode")
        return d


def _same_value(a: str, b: str) -> bool:
    sa, sb = parse_slot(a), parse_slot(b)
    return sa is not None and sb is not None and sa == sb


def within_episode(decisions: list[Decision]) -> list[Decision]:
    """The same decisions, in order, made consistent inside one episode."""
    episode = _Episode()
    for d in decisions:
        episode.add(d)
    return episode.out
