"""episodic: memory consolidation for long-running AI agents.

The pure core: domain models, segmentation, salience, facts, retrieval
scoring, reflection, prompts and the LLM and embedder seams. It imports none
of prefect or lancedb; storage/, the service (episodic/service/), tasks/,
flows/ and the faces (episodic/adapters/) build on it.

`episodic.Memory` is the Python face (episodic/adapters/embedded.py), loaded
on first use so that importing the core stays light.
"""

from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "Memory":
        from episodic.config import prefect_defaults

        prefect_defaults(quiet=True)  # offline: no telemetry, a quiet terminal
        from episodic.adapters.embedded import Memory

        return Memory
    raise AttributeError(f"module 'episodic' has no attribute {name!r}")
