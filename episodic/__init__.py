"""episodic: memory consolidation for long-running AI agents.

The pure core: domain models, segmentation, salience, facts, retrieval
scoring, reflection, prompts and the LLM and embedder seams. It imports none
of prefect or lancedb; storage/, tasks/ and flows/ build on it.
"""

__version__ = "0.1.0"
