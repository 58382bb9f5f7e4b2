"""Embedders: the protocol and its backends (MiniLM fp32, ONNX int8, static,
hash for tests), chosen by name."""

from __future__ import annotations

from episodic.embed.base import Embedder, normalise
from episodic.embed.hash import HashEmbedder
from episodic.embed.minilm import MiniLMEmbedder

__all__ = ["Embedder", "HashEmbedder", "MiniLMEmbedder", "make_embedder", "normalise"]


def make_embedder(name: str) -> Embedder:
    if name == "minilm":
        return MiniLMEmbedder()
    if name == "hash":
        return HashEmbedder()
    if name == "onnx-int8":
        from episodic.embed.onnx import OnnxInt8Embedder

        return OnnxInt8Embedder()
    if name == "static":
        from episodic.embed.static import StaticEmbedder

        return StaticEmbedder()
    raise ValueError(f"unknown embedder {name!r}; known: minilm, onnx-int8, static, hash")
