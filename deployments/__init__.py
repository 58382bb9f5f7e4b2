"""Prefect deployments: prefect.yaml (work pool) and serve.py (one process)."""
