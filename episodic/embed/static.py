"""A static embedding distilled locally from all-MiniLM-L6-v2 with model2vec.

Distillation runs the packaged transformer once over its own vocabulary
(no hub, no corpus) and keeps one vector per token; a text is then the mean
of its tokens' vectors: no attention, so tens of thousands of turns per
second on a CPU, at some cost in quality (see docs/performance.md). The
distilled model is cached under `EPISODIC_HOME/models`. 384 dimensions, the
same as the transformer, so a store can switch backends without new tables."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from episodic.embed.base import models_dir, normalise, offline_hub, weights_path

DIM = 384


def distill_static(out_dir: Path | None = None) -> Path:
    """Distil once and save; an existing model is reused."""
    out = out_dir or models_dir() / "all-MiniLM-L6-v2-static"
    if (out / "model.safetensors").exists():
        return out
    offline_hub()
    from model2vec.distill import distill

    model = distill(model_name=str(weights_path()), pca_dims=DIM, device="cpu")
    tmp = out.with_name(out.name + ".tmp")
    model.save_pretrained(str(tmp))
    tmp.replace(out)
    return out


class StaticEmbedder:
    """model2vec static vectors of all-MiniLM-L6-v2's vocabulary, mean-pooled."""

    name = "all-MiniLM-L6-v2-static"
    dim = DIM

    def __init__(self, model_dir: Path | None = None) -> None:
        self.model_dir = model_dir
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            from model2vec import StaticModel

            self._model = StaticModel.from_pretrained(str(distill_static(self.model_dir)))
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        keep = [i for i, t in enumerate(texts) if t.strip()]
        if keep:
            vecs = self._load().encode([texts[i] for i in keep], show_progress_bar=False)
            out[keep] = np.asarray(vecs, dtype=np.float32)
        return normalise(out)
