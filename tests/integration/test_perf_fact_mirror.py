"""The in-memory view of active facts used by the windowed merge ranks
candidates as the store does, and follows a plan as `Facts.apply` does."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from episodic.embed import HashEmbedder
from episodic.service.fact_mirror import ActiveFacts
from episodic.vocab import FactEvent
from storage.facts import Facts, PlannedFact, new_fact_id

TEXTS = [
    "user lives in Lisbon",
    "user works as a nurse",
    "user has a dog named Rex",
    "user prefers tea over coffee",
    "user is learning Rust",
    "user's sister is called Ana",
    "user runs every morning",
    "user drives a blue car",
]
NOW = datetime(2025, 5, 1, tzinfo=UTC)


def _plan(
    i: int, event: FactEvent, text: str | None, vec: np.ndarray, target: str | None = None
) -> PlannedFact:
    # fields in order: index, event, target, old text, new text, valid from, decided by, vector
    return PlannedFact(i, event, target, None, text, NOW, "test", [float(x) for x in vec])


def test_mirror_ranks_like_the_store_and_follows_plans(store) -> None:  # type: ignore[no-untyped-def]
    emb = HashEmbedder()
    facts = Facts(store)
    vecs = emb.embed(TEXTS)
    facts.apply(
        "u1",
        "ep1",
        [_plan(i, "ADD", t, v) for i, (t, v) in enumerate(zip(TEXTS, vecs, strict=True))],
        NOW,
    )
    facts.apply(
        "u2", "ep9", [_plan(0, "ADD", "user lives in Lisbon", vecs[0])], NOW
    )  # another user
    mirror = ActiveFacts(facts, "u1")
    # distinctive queries: ties (equal cosine) may be broken differently
    for q in ["lives in Lisbon", "dog named Rex", "tea over coffee", "learning Rust"]:
        qv = emb.embed([q])[0]
        want = [f.fact_id for f, sim in facts.candidates("u1", q, qv, k=3) if sim > 0.3]
        got = [c.fact_id for c in mirror.candidates(q, qv, k=3)]
        assert len(want) == 1 and got[0] == want[0]
    # a plan that updates fact 0 and deletes fact 1: the mirror sees what apply does
    old0, old1 = new_fact_id("u1", "ep1", 0), new_fact_id("u1", "ep1", 1)
    nv = emb.embed(["user lives in Porto"])[0]
    plan = [
        _plan(0, "UPDATE", "user lives in Porto", nv, old0),
        _plan(1, "DELETE", None, vecs[1], old1),
    ]
    mirror.apply("ep2", plan)
    facts.apply_many("u1", [("ep2", plan)], NOW)
    qv = emb.embed(["lives in Porto"])[0]
    want = [f.fact_id for f, _ in facts.candidates("u1", "lives in Porto", qv, k=1)]
    got = [c.fact_id for c in mirror.candidates("lives in Porto", qv, k=1)]
    assert got == want == [new_fact_id("u1", "ep2", 0)]
    assert {f.fact_id for f in facts.list("u1")} == set(ActiveFacts(facts, "u1")._text)
