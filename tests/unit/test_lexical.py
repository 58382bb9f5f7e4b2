"""The in-memory BM25: its analyzer gives the terms LanceDB's full-text index
stores (so a query matches what it did there), and its scores are BM25's."""

from __future__ import annotations

import math

import lance
from hypothesis import given, settings
from hypothesis import strategies as st

from episodic.lexical import K1, Bm25, tokens

SAMPLES = [
    "the Cats and Dogs",
    "I moved to Amsterdam last week, and I'm running 5 km every morning!",
    "Café naïve résumé — Zürich, São Paulo",
    "#[derive(Parser)] struct Args { path: PathBuf }",
    "don't won't it's they're you've",
    "2024-01-02 at 10:30, v1.2.3 x86_64 foo_bar baz-qux",
    "a" * 41 + " short words stay",
    "ALL CAPS SHOUTING ABOUT THEMSELVES and ourselves",
    "Emoji 🎉 and 中文 text mixed with English",
]


def _lance(text: str) -> list[str]:
    return [t.text for t in lance.tokenize(text)]


def test_terms_are_lancedb_full_text_terms() -> None:
    for text in SAMPLES:
        assert tokens(text) == _lance(text), text


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=80))
def test_terms_match_lancedb_on_any_text(text: str) -> None:
    assert tokens(text) == _lance(text)


def test_scores_are_bm25() -> None:
    docs = [["cat", "sat"], ["cat", "cat", "mat", "hat"], ["dog"], ["cat", "dog", "dog"]]
    ix = Bm25()
    ix.extend(docs)
    avg = sum(map(len, docs)) / len(docs)
    for q in (["cat"], ["dog", "mat"], ["cat", "dog"]):
        got = ix.scores(q)
        for d, terms in enumerate(docs):
            want = 0.0
            for t in set(q):
                df = sum(1 for x in docs if t in x)
                tf = terms.count(t)
                if not tf:
                    continue
                idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                want += idf * tf * (K1 + 1) / (tf + K1 * (1 - 0.75 + 0.75 * len(terms) / avg))
            assert math.isclose(float(got[d]), want, rel_tol=1e-12), (q, d)


def test_top_is_best_first_and_skips_documents_without_a_term() -> None:
    ix = Bm25()
    ix.extend([["a"], ["b", "b"], ["b"], ["c"], ["b", "x", "y", "z"]])
    got = ix.top(["b"], 10)
    assert [d for d, _ in got] == [1, 2, 4]
    assert all(s > 0 for _, s in got)
    assert [d for d, _ in ix.top(["b"], 2)] == [1, 2]
    assert ix.top(["nothing"], 5) == []


def test_ascii_analyzer_is_lancedb_on_ascii_text() -> None:
    from episodic.lexical import _ANALYZER

    for text in [s for s in SAMPLES if s.isascii()]:
        assert list(_ANALYZER.analyze(text)) == _lance(text), text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=120))
def test_ascii_analyzer_matches_lancedb_on_any_ascii_text(text: str) -> None:
    from episodic.lexical import _ANALYZER

    assert list(_ANALYZER.analyze(text)) == _lance(text)
