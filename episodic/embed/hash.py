"""A deterministic bag of hashed tokens for tests: texts sharing words are
close and nothing needs a model."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from episodic.embed.base import normalise

_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Token-hash bag of words (with signed buckets), L2-normalised. Deterministic."""

    def __init__(self, dim: int = 384) -> None:
        if dim < 1:
            raise ValueError("dim must be >= 1")
        self.dim = dim
        self.name = f"hash-{dim}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for tok in _TOKEN.findall(text.lower()):
                h = int.from_bytes(
                    hashlib.blake2b(tok.encode("utf-8"), digest_size=8).digest(), "little"
                )
                out[i, h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        return normalise(out)
