"""Prefect flows (consolidate, reflect, maintain, ingest) and the CLI."""

from episodic.config import apply_prefect_env

apply_prefect_env()
