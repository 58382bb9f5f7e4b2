"""Prefect flows, and nothing else: ingest, consolidate, reflect, maintain."""
