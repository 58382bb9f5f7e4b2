"""BM25 over one user's documents, in memory, tokenized as LanceDB's full-text
index tokenizes (its default: simple split, tokens over 40 characters dropped,
lower case, English Snowball stems, English stop words matched on the stem,
ASCII folding), so a query's words match the same terms they did there.
ASCII text goes through tantivy's analyzer built the same way (about five
times faster); other text through LanceDB's own (`lance.tokenize`), whose
ASCII folding knows more letters than tantivy's.

Statistics (document count, lengths, document frequencies) are the user's own:
a word common in one user's memory is common for that user, whatever the
others said. Documents are only appended; `top` scores with the usual BM25
(k1 1.2, b 0.75, idf ln(1 + (N - n + .5) / (n + .5)))."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import tantivy

K1 = 1.2
B = 0.75
MAX_TOKEN_CHARS = 40

# LanceDB's English stop words, as stems (its filter runs after the stemmer):
# read off `lance.tokenize` word by word; tests/unit/test_lexical.py checks
# the analyzer against it
STOP_STEMS = (
    "a about after again against all am an and are as at be been below between "
    "both but by can did do down each few for from further had has have he her "
    "here herself him himself his how i if in into is it itself just me more "
    "most my myself now of off on or other our out over own re same she should "
    "so some such than that the their them then there these they this those "
    "through to too under until up was we were what when where which while who "
    "whom will with you your yourself"
).split()


def analyzer() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(MAX_TOKEN_CHARS))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stemmer("english"))
        .filter(tantivy.Filter.custom_stopword(STOP_STEMS))
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )


_ANALYZER = analyzer()


def tokens(text: str) -> list[str]:
    """The terms of `text`, as the index stores them."""
    if text.isascii():
        return list(_ANALYZER.analyze(text))
    import lance  # here: a third of the service's import, for non-ASCII text only

    # lancedb.index.FTS()'s defaults, the index the tables declare
    got = lance.tokenize(
        text,
        base_tokenizer="simple",
        language="English",
        max_token_length=MAX_TOKEN_CHARS,
        lower_case=True,
        stem=True,
        remove_stop_words=True,
        ascii_folding=True,
    )
    return [t.text for t in got]


class Bm25:
    """An append-only BM25 index of numbered documents (0, 1, ... in order added)."""

    def __init__(self) -> None:
        self._term: dict[str, int] = {}
        self._docs: list[array[int]] = []  # per term: the documents holding it
        self._tfs: list[array[int]] = []  # ... and how often
        self._lengths = array("i")
        self._total = 0
        self._postings = 0

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, terms: Sequence[str]) -> int:
        """Append one document's terms; returns its number."""
        n = len(self._lengths)
        counts: dict[str, int] = {}
        for t in terms:
            counts[t] = counts.get(t, 0) + 1
        for t, c in counts.items():
            i = self._term.get(t)
            if i is None:
                i = self._term[t] = len(self._docs)
                self._docs.append(array("i"))
                self._tfs.append(array("i"))
            self._docs[i].append(n)
            self._tfs[i].append(c)
        self._postings += len(counts)
        self._lengths.append(len(terms))
        self._total += len(terms)
        return n

    def extend(self, docs: Iterable[Sequence[str]]) -> None:
        for terms in docs:
            self.add(terms)

    def idf(self, term: str) -> float:
        """The term's inverse document frequency (0 for a term no document holds)."""
        i = self._term.get(term)
        if i is None:
            return 0.0
        n, df = len(self._lengths), len(self._docs[i])
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query: Sequence[str] | Mapping[str, float]) -> np.ndarray:
        """Every document's BM25 score for the query terms (0 where none occurs);
        a mapping weighs each term (an expanded query's added terms)."""
        n = len(self._lengths)
        out = np.zeros(n, dtype=np.float64)
        if not n or not self._total:
            return out
        weights = query if isinstance(query, Mapping) else dict.fromkeys(query, 1.0)
        lengths = np.frombuffer(self._lengths, dtype=np.int32)
        norm = K1 * (1.0 - B + B * lengths / (self._total / n))
        for t, w in weights.items():
            i = self._term.get(t)
            if i is None or w <= 0.0:
                continue
            docs = np.frombuffer(self._docs[i], dtype=np.int32)
            tf = np.frombuffer(self._tfs[i], dtype=np.int32).astype(np.float64)
            idf = math.log(1.0 + (n - len(docs) + 0.5) / (len(docs) + 0.5))
            out[docs] += w * idf * tf * (K1 + 1.0) / (tf + norm[docs])
        return out

    def top(self, query: Sequence[str] | Mapping[str, float], k: int) -> list[tuple[int, float]]:
        """The `k` best documents holding a query term, best first (ties: lower number)."""
        s = self.scores(query)
        hit = np.flatnonzero(s > 0.0)
        if len(hit) > k:
            hit = hit[np.argpartition(-s[hit], k - 1)[:k]]
        order = sorted(hit.tolist(), key=lambda d: (-s[d], d))
        return [(d, float(s[d])) for d in order]

    def nbytes(self) -> int:
        """About what the index holds in memory."""
        return self._postings * 8 + len(self._lengths) * 4 + len(self._term) * 120
