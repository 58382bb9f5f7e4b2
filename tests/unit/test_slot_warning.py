"""A consolidation warns when the way one user's runs are kept apart is
unsafe, as the README's settings table says."""

from __future__ import annotations

from tasks.exclusion import slot_warning

SERVER = "http://127.0.0.1:4200/api"


def test_object_storage_without_the_prefect_slot_is_warned() -> None:
    said = slot_warning("s3://bucket/x", "local", SERVER)
    assert said is not None and "EPISODIC_USER_SLOT=prefect" in said
    assert slot_warning("s3://bucket/x", "prefect", SERVER) is None


def test_the_prefect_slot_on_the_temporary_api_is_warned() -> None:
    said = slot_warning("/home/me/.episodic/lancedb", "prefect", None)
    assert said is not None and "prefect server start" in said
    assert slot_warning("/home/me/.episodic/lancedb", "local", None) is None
