"""Embedder protocol; placeholder until the segmentation issue fills it in."""
