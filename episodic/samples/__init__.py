"""The bundled sample transcripts (see README.md here)."""

from pathlib import Path

# the demo's agent transcript: `episodic demo` and `episodic eval agent-recall` read it
DEMO_TRANSCRIPT = Path(__file__).with_name("demo_agent.jsonl")
