"""Pseudo-relevance feedback for the turns' BM25 (RM3-style, lexical only):
the best-ranked documents of a first BM25 pass lend the query their rarer
terms at a lower weight, and a second pass ranks with the expanded query.
Real chats say a thing in other words than the question asks it ("hobbies"
against "taking a cooking class"); the words the top hits share with each
other are the cheapest bridge (no model call, two passes over postings)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

FEEDBACK_DOCS = 10  # first-pass documents read for their terms
ADDED_TERMS = 20  # terms added to the query (10: RT .737, 30: .737; 20: .741)
ADDED_WEIGHT = 0.3  # the best added term's weight; a query term weighs 1
MIN_DOCS = 2  # a term must be in this many feedback documents (one turn's word is noise)
# feedback must be a small part of the collection: in a store of a few dozen
# turns the "best documents" are most of it, and their words are every topic's
MIN_COLLECTION = 10 * FEEDBACK_DOCS


def expanded(
    query: Sequence[str],
    feedback: Sequence[tuple[Sequence[str], float]],
    idf: Callable[[str], float],
) -> dict[str, float]:
    """The query's terms at weight 1, plus the `ADDED_TERMS` terms of the
    `feedback` documents (terms, first-pass score) with the most mass:
    sum over documents of (the term's share of the document) x (its score
    relative to the best) x idf, scaled so the best weighs `ADDED_WEIGHT`."""
    out = dict.fromkeys(query, 1.0)
    if not feedback or ADDED_TERMS <= 0:
        return out
    top = max(s for _, s in feedback) or 1.0
    mass: dict[str, float] = {}
    seen: dict[str, int] = {}
    for terms, score in feedback:
        if not terms:
            continue
        for t in set(terms):
            if t in out:
                continue
            share = terms.count(t) / len(terms)
            mass[t] = mass.get(t, 0.0) + share * (score / top) * idf(t)
            seen[t] = seen.get(t, 0) + 1
    best = sorted(
        ((t, m) for t, m in mass.items() if seen[t] >= MIN_DOCS), key=lambda tm: (-tm[1], tm[0])
    )[:ADDED_TERMS]
    if not best:
        return out
    hi = best[0][1]
    for t, m in best:
        out[t] = ADDED_WEIGHT * m / hi
    return out
