"""Crash points live in episodic/crashpoints.py (storage/ uses them too); this
name stays for the tasks and tests that import it."""

from episodic.crashpoints import InjectedCrash, _hits, crashpoint, reset

__all__ = ["InjectedCrash", "_hits", "crashpoint", "reset"]
