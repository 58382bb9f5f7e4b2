"""LanceDB persistence: the only package that talks to the database."""

from storage.namespace_client import defer

defer()  # before lancedb is imported: its unused REST client costs half the import

from storage.db import Store, open_store  # noqa: E402

__all__ = ["Store", "open_store"]
