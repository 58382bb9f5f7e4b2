"""The exception tree of episodic.

EpisodicError
+-- IngestError            a source could not be read at all
+-- StorageError           LanceDB refused or lost a write
|   +-- ConflictError      an optimistic version check failed; retry the poll
+-- LLMError               a provider call failed after its retries
|   +-- LLMTransientError  timeout, 429 or 5xx; worth retrying
|   +-- LLMSchemaError     the answer never fit the response model
+-- SegmenterStateError    a checkpoint could not be restored
"""

from __future__ import annotations


class EpisodicError(Exception):
    """Root of every error this package raises on purpose."""


class IngestError(EpisodicError):
    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


class StorageError(EpisodicError):
    pass


class ConflictError(StorageError):
    def __init__(self, key: str, expected: int, found: int) -> None:
        super().__init__(f"{key}: expected version {expected}, found {found}")
        self.key = key
        self.expected = expected
        self.found = found


class LLMError(EpisodicError):
    def __init__(self, provider: str, model: str, reason: str) -> None:
        super().__init__(f"{provider}/{model}: {reason}")
        self.provider = provider
        self.model = model
        self.reason = reason


class LLMTransientError(LLMError):
    pass


class LLMSchemaError(LLMError):
    pass


class SegmenterStateError(EpisodicError):
    pass
