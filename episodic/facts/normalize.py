"""Text normalisation for exact-duplicate checks, and small token helpers.

`normalize` is what "equal after normalisation" means everywhere in fact
merge: NFKC, casefold, punctuation to spaces, the articles a / an / the
dropped, whitespace collapsed. It is idempotent (a property test checks it).
"""

from __future__ import annotations

import re
import unicodedata

import numpy as np

from episodic.facts.types import Vector

_NON_WORD = re.compile(r"[\W_]+")
_ARTICLES = frozenset({"a", "an", "the"})
_MAX_FOLD_PASSES = 4


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def normalize(text: str) -> str:
    """Canonical form of a fact for exact-duplicate checks."""
    # apostrophes vanish rather than split words: "user's" -> "users"
    out = text
    for _ in range(_MAX_FOLD_PASSES):
        folded = _fold(out)
        if folded == out:
            break
        out = folded
    out = out.replace("'", "").replace("\u2019", "")
    words = [w for w in _NON_WORD.sub(" ", out).split() if w not in _ARTICLES]
    return " ".join(words)


def words(text: str) -> list[str]:
    """Lowercase word tokens, apostrophes kept inside words ("didn't")."""
    return re.findall(r"[\w']+", text.casefold().replace("\u2019", "'"))


def stem(word: str) -> str:
    """A crude suffix stripper, enough to meet "smokes" with "smoking"."""
    w = word.casefold().removesuffix("'s")
    for suffix in ("ing", "ed", "es", "s", "e"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)]
    return w


def cosine(a: Vector | None, b: Vector | None) -> float | None:
    """Cosine similarity, or None when either vector is missing or zero."""
    if a is None or b is None:
        return None
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape or x.size == 0:
        return None
    nx, ny = float(np.linalg.norm(x)), float(np.linalg.norm(y))
    if nx == 0.0 or ny == 0.0:
        return None
    return float(np.dot(x, y) / (nx * ny))
