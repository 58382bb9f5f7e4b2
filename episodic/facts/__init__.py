"""Fact distillation and the ADD / UPDATE / DELETE / NOOP merge, as pure logic.

    extract_facts(provider, turns, now=...)      -> [NewFact]
    decide(provider, candidate_sets, now=...)    -> [Decision], one per set

Storage applies the decisions as supersession rows and history rows; nothing
here touches a table.
"""

from episodic.facts.consistency import RULE
from episodic.facts.extract import extract_facts
from episodic.facts.merge import decide
from episodic.facts.negation import is_negation_of
from episodic.facts.normalize import cosine, normalize
from episodic.facts.offline_extract import offline_extract
from episodic.facts.offline_merge import DEFAULT_DUP_THRESHOLD, merge_one, offline_merge
from episodic.facts.schema import ExtractedFact, ExtractedFacts, MergeDecisions, MergeItem
from episodic.facts.slots import Slot, SlotValue, parse_slot, slot_of
from episodic.facts.types import CandidateSet, Decision, ExistingFact, FactTurn, NewFact
from episodic.prompts.facts import extraction_messages, merge_context, merge_messages

__all__ = [
    "DEFAULT_DUP_THRESHOLD",
    "RULE",
    "CandidateSet",
    "Decision",
    "ExistingFact",
    "ExtractedFact",
    "ExtractedFacts",
    "FactTurn",
    "MergeDecisions",
    "MergeItem",
    "NewFact",
    "Slot",
    "SlotValue",
    "cosine",
    "decide",
    "extract_facts",
    "extraction_messages",
    "is_negation_of",
    "merge_context",
    "merge_messages",
    "merge_one",
    "normalize",
    "offline_extract",
    "offline_merge",
    "parse_slot",
    "slot_of",
]
