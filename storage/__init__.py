"""LanceDB persistence: the only package that talks to the database."""

from storage.db import Store, open_store

__all__ = ["Store", "open_store"]
