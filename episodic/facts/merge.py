"""Decide ADD / UPDATE / DELETE / NOOP for the new facts of one episode.

Mem0's merge lost memories in four ways; each has a guard here:

- the same memory added twice was deleted (mem0 #1674): a new fact equal to
  a candidate after `normalize` is a NOOP decided by rule, with no call; two
  equal new facts of one episode give one decision and a NOOP;
- a contradiction deleted the old memory and never added the new one
  (#4536): a DELETE stands only when the new fact is an explicit ending of
  its target (`is_negation_of`); otherwise it becomes an UPDATE, which
  supersedes the old row and adds the new one;
- with an empty store the model answered NONE and nothing was saved (#2875):
  a new fact without candidates is an ADD by rule, with no call, and a new
  fact the model gave no decision for is an ADD, with a warning;
- broken answers made `add` return nothing (#3391, #4607): the answer is
  validated against the numbers shown (instructor re-asks), and when it
  never fits, the offline merge decides and `decided_by` says
  "offline-fallback".

A new fact none of whose candidates it could conflict with or repeat is an
ADD by rule too, with no call (`_related`): no candidate it ends
(`is_negation_of`), none it says it replaces (`replacement`), none filling
the same slot, none closer than
`ASK_SIMILARITY` in cosine. The candidates are only the nearest stored facts,
always some once a user has facts; asking about unrelated ones was most of
the merge calls, and the offline merge answers ADD for exactly these sets.

Only the sets no rule settled go to the model, all in one call. After the
call, decisions are made consistent inside the episode: two new facts that
touch the same stored fact chain (the second updates the row the first
created), and a new fact that changes or ends an earlier new fact of the
same episode targets that fact's row (`Decision.target_index`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from episodic.facts.consistency import RULE, within_episode
from episodic.facts.correction import CORRECTION, corrected_fact
from episodic.facts.negation import FORGET_REQUEST, is_negation_of
from episodic.facts.normalize import cosine, normalize
from episodic.facts.offline_merge import DEFAULT_DUP_THRESHOLD, merge_one
from episodic.facts.replacement import changes_preference, names_replaced
from episodic.facts.schema import MergeDecisions, MergeItem
from episodic.facts.slots import parse_slot
from episodic.facts.types import CandidateSet, Decision, ExistingFact
from episodic.llm.accounting import record_fallback, record_untrusted
from episodic.llm.base import LLMProvider, Usage
from episodic.llm.fallback import OFFLINE_FALLBACK, structured_or_offline
from episodic.llm.trust import TWO_ACTIVE
from episodic.prompts.facts import merge_context, merge_messages, number_existing

log = logging.getLogger(__name__)

# below this cosine (and with no shared slot and no ending) a stored fact is
# neither a conflict nor a duplicate of a new one: no model is asked. Well
# under the NOOP threshold (0.95), so paraphrases still reach the model.
ASK_SIMILARITY = 0.80


def decide(
    provider: LLMProvider,
    candidate_sets: Sequence[CandidateSet],
    *,
    now: datetime,
    dup_threshold: float = DEFAULT_DUP_THRESHOLD,
) -> list[Decision]:
    """One decision per candidate set, in order; at most one model call."""
    if not 0.0 < dup_threshold <= 1.0:
        raise ValueError(f"dup_threshold must be in (0, 1], got {dup_threshold}")
    sets = list(candidate_sets)
    out: list[Decision | None] = [_by_rule(sets, i, dup_threshold) for i in range(len(sets))]
    pending = [i for i, d in enumerate(out) if d is None]
    if pending:
        asked = _ask(provider, [sets[i] for i in pending], now=now, dup_threshold=dup_threshold)
        for i, decision in zip(pending, asked, strict=True):
            out[i] = decision
    decisions = [d for d in out if d is not None]
    if len(decisions) != len(sets):  # a bug, not a model fault: say so loudly
        raise AssertionError("decide() lost a decision")
    return within_episode(decisions)


def _duplicates(a: CandidateSet, b: CandidateSet, threshold: float) -> bool:
    if normalize(a.new.text) == normalize(b.new.text):
        return True
    sim = cosine(a.new_vector, b.new_vector)
    if sim is None or sim < threshold:
        return False
    if is_negation_of(a.new.text, b.new.text) or is_negation_of(b.new.text, a.new.text):
        return False
    sa, sb = parse_slot(a.new.text), parse_slot(b.new.text)
    return sa is None or sb is None or sa == sb


def _by_rule(sets: list[CandidateSet], i: int, threshold: float) -> Decision | None:
    """The decision the guard rails make without a model, or None to ask."""
    cs = sets[i]
    for j in range(i):
        if _duplicates(cs, sets[j], threshold):
            note = f"repeats new fact {j} of the same episode"
            return Decision("NOOP", None, None, sets[j].new.text, cs.new, RULE, j, note)
    key = normalize(cs.new.text)
    for fact in cs.candidates:
        if normalize(fact.text) == key:
            return Decision("NOOP", fact.fact_id, None, fact.text, cs.new, RULE, note="equal text")
    if FORGET_REQUEST.match(cs.new.text) and not any(
        is_negation_of(cs.new.text, f.text) for f in cs.candidates
    ):
        # kept as a fact, a request to forget would keep what it names
        return Decision("NOOP", None, None, None, cs.new, RULE, note="nothing to forget")
    if CORRECTION.match(cs.new.text) and not any(
        corrected_fact(cs.new.text, f.text) for f in cs.candidates
    ):
        # a correction of a value no stored fact holds corrects nothing
        return Decision("NOOP", None, None, None, cs.new, RULE, note="nothing to correct")
    if not cs.candidates:
        return Decision("ADD", None, cs.new.text, None, cs.new, RULE, note="no candidates")
    if not any(_related(cs, fact, threshold) for fact in cs.candidates):
        return Decision("ADD", None, cs.new.text, None, cs.new, RULE, note="no related candidate")
    return None


def _related(cs: CandidateSet, fact: ExistingFact, threshold: float) -> bool:
    """Could the new fact end, change or repeat this stored fact?"""
    if is_negation_of(cs.new.text, fact.text) or corrected_fact(cs.new.text, fact.text):
        return True
    if names_replaced(cs.new.text, fact.text) or changes_preference(cs.new.text, fact.text):
        return True
    new_slot, old_slot = parse_slot(cs.new.text), parse_slot(fact.text)
    if new_slot is not None and old_slot is not None and new_slot.slot == old_slot.slot:
        return True
    sim = cosine(cs.new_vector, fact.vector)
    return sim is None or sim >= min(ASK_SIMILARITY, threshold)


def _ask(
    provider: LLMProvider, sets: list[CandidateSet], *, now: datetime, dup_threshold: float
) -> list[Decision]:
    context = merge_context(sets, dup_threshold=dup_threshold)
    existing, per_set = number_existing(sets)
    answer = structured_or_offline(provider, merge_messages(sets, now=now), MergeDecisions, context)
    if answer.error:
        log.warning("fact merge fell back to %s: %s", answer.source, answer.error)
    items: dict[int, MergeItem] = {}
    for item in answer.value.decisions:
        if not 1 <= item.new_index <= len(sets) or item.new_index in items:
            log.warning("ignored merge item %s from %s: bad new_index", item, answer.source)
            continue
        items[item.new_index] = item
    out: list[Decision] = []
    for k, cs in enumerate(sets, start=1):
        got = items.get(k)
        if got is None:
            log.warning("%s gave no decision for new fact %r: ADD", answer.source, cs.new.text)
            note = f"{answer.source} gave no decision"
            out.append(Decision("ADD", None, cs.new.text, None, cs.new, RULE, note=note))
        elif got.event != "ADD" and (got.id is None or not 1 <= got.id <= len(existing)):
            # validation should have caught it; a provider that skipped it gets the offline merge
            log.warning("merge item %s from %s names no shown fact", got, answer.source)
            out.append(_offline(cs, per_set[k - 1], existing, dup_threshold))
        else:
            target = existing[got.id - 1] if got.event != "ADD" and got.id else None
            decision = _checked(got, target, cs, answer.source)
            if decision.event == "ADD" and _leaves_two_values(cs, per_set[k - 1], existing):
                # the model kept both "lives in Paris" and "lives in Berlin" active
                log.warning(
                    "%s added %r beside a value of the same slot: offline merge",
                    answer.source, cs.new.text,
                )  # fmt: skip
                fixed = _offline(cs, per_set[k - 1], existing, dup_threshold)
                usage = getattr(provider, "usage", None)
                if isinstance(usage, Usage):
                    record_fallback(usage, "merge")
                    record_untrusted(usage, "merge", TWO_ACTIVE)
                decision = replace(fixed, note=f"untrusted: {TWO_ACTIVE} ({answer.source})")
            out.append(decision)
    return out


def _leaves_two_values(cs: CandidateSet, ids: list[int], existing: list[ExistingFact]) -> bool:
    """An ADD of an exclusive slot's value beside a shown fact with another value."""
    new = parse_slot(cs.new.text)
    if new is None or not new.exclusive:
        return False
    for i in ids:
        old = parse_slot(existing[i - 1].text)
        if old is not None and old.slot == new.slot and old.value != new.value:
            return True
    return False


def _offline(
    cs: CandidateSet, ids: list[int], existing: list[ExistingFact], threshold: float
) -> Decision:
    shown = [(i, existing[i - 1].text, existing[i - 1].vector) for i in ids]
    vec = None if cs.new_vector is None else [float(x) for x in cs.new_vector.ravel()]
    cands = [(i, t, None if v is None else [float(x) for x in v.ravel()]) for i, t, v in shown]
    event, cid = merge_one(cs.new.text, vec, cands, dup_threshold=threshold)
    target = existing[cid - 1] if cid is not None else None
    item = MergeItem(event=event, id=cid, text="", new_index=1)
    return _checked(item, target, cs, OFFLINE_FALLBACK)


def _checked(item: MergeItem, target: ExistingFact | None, cs: CandidateSet, by: str) -> Decision:
    """A valid item as a Decision, with the after-call guard rails applied."""
    new = cs.new
    if item.event == "ADD" or target is None:
        return Decision("ADD", None, new.text, None, new, by)
    if item.event == "NOOP":
        return Decision("NOOP", target.fact_id, None, target.text, new, by)
    if item.event == "UPDATE":
        text = " ".join(item.text.split()) or new.text
        if normalize(text) == normalize(target.text):
            return Decision(
                "NOOP", target.fact_id, None, target.text, new, RULE,
                note=f"{by} chose UPDATE to the same text",
            )  # fmt: skip
        return Decision("UPDATE", target.fact_id, text, target.text, new, by)
    if is_negation_of(new.text, target.text):
        return Decision("DELETE", target.fact_id, None, target.text, new, by)
    log.warning("%s chose DELETE of %r for %r, not an ending: UPDATE", by, target.text, new.text)
    return Decision(
        "UPDATE", target.fact_id, new.text, target.text, new, RULE,
        note=f"{by} chose DELETE; kept the new information as an UPDATE",
    )  # fmt: skip
