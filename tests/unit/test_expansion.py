"""Pseudo-relevance feedback (episodic.expansion) and the weighted BM25 query
it ranks with: the added terms come from the first pass's best documents,
weigh less than the query's own, and find a document the query's words miss."""

from __future__ import annotations

from episodic import expansion
from episodic.lexical import Bm25, tokens

DOCS = [
    "I'm taking a cooking class today, learning pasta",
    "my cooking class made tiramisu and pasta",
    "went skiing in the mountains, love skiing",
    "the weather is nice",
    "made osso buco with pasta at home",
]


def _index() -> Bm25:
    b = Bm25()
    b.extend(tokens(d) for d in DOCS)
    return b


def test_weighted_query_equals_plain_query_at_weight_one() -> None:
    b = _index()
    q = tokens("cooking class")
    assert b.scores(q).tolist() == b.scores(dict.fromkeys(q, 1.0)).tolist()
    half = b.scores(dict.fromkeys(q, 0.5))
    assert [round(2 * x, 9) for x in half] == [round(x, 9) for x in b.scores(q)]


def test_added_terms_come_from_several_feedback_documents_and_weigh_less() -> None:
    b = _index()
    q = tokens("cooking class")
    first = b.top(q, 10)
    got = expansion.expanded(q, [(tokens(DOCS[p]), s) for p, s in first], b.idf)
    assert all(got[t] == 1.0 for t in q)
    added = {t: w for t, w in got.items() if t not in q}
    assert "pasta" in added  # in both feedback documents
    assert "tiramisu" not in added  # in one only
    assert max(added.values()) <= expansion.ADDED_WEIGHT


def test_expanded_query_reaches_a_document_the_query_words_miss() -> None:
    b = _index()
    q = tokens("cooking class")
    assert 4 not in [p for p, _ in b.top(q, 10)]
    got = expansion.expanded(q, [(tokens(DOCS[p]), s) for p, s in b.top(q, 10)], b.idf)
    ranked = [p for p, _ in b.top(got, 10)]
    assert ranked[:2] == [0, 1] or ranked[:2] == [1, 0]  # the query's own matches stay first
    assert 4 in ranked


def test_no_feedback_leaves_the_query() -> None:
    assert expansion.expanded(["a", "b"], [], lambda t: 1.0) == {"a": 1.0, "b": 1.0}
