"""Benchmarks and evaluation harnesses: metrics, datasets, segmentation, LoCoMo, speed."""
