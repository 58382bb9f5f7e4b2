"""Prefect tasks: thin wrappers over episodic/ and storage/."""

from episodic.config import apply_prefect_env

apply_prefect_env()
