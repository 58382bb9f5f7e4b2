"""Prefect tasks: thin wrappers over episodic/ and storage/."""
