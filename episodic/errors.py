"""The exception tree of episodic.

EpisodicError
+-- ConfigError            a setting is invalid or missing (also a ValueError)
+-- IngestError            a source could not be read at all
+-- StorageError           LanceDB refused or lost a write
|   +-- ConflictError      an optimistic version check failed; retry the poll
+-- LLMError               a provider call failed after its retries
|   +-- LLMTransientError  timeout, 429 or 5xx; worth retrying
|   +-- LLMSchemaError     the answer never fit the response model
+-- SegmenterStateError    a checkpoint could not be restored
+-- NotFoundError          no such user, episode or fact for this user
+-- BusyError              another run held the user past the wait; try again
+-- KeyReusedError         an idempotency key sent again with other turns (a ValueError)

`ExitCode` is the one table of the command line's exit codes.
"""

from __future__ import annotations

import errno
import re
from enum import IntEnum


class ExitCode(IntEnum):
    """What `episodic <command>` exits with."""

    OK = 0
    REJECTED = 1  # some input rejected (ingest) or problems found (checks)
    USAGE = 2  # bad arguments, an unreadable source, or a bad setting
    BUSY = 3  # another run holds the user's lease
    STORAGE = 4  # storage full, read-only or not writable


# errno values that mean "the store cannot take the write" (full, read-only,
# not ours, or a file where its directory should be), not a bug
STORAGE_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTDIR}
)
_OS_ERROR = re.compile(r"\(os error (\d+)\)")


def storage_errno(exc: BaseException) -> int | None:
    """The errno of a full, read-only or unwritable store behind `exc` (an
    OSError, or LanceDB's "(os error 28)" text, anywhere in its chain)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        code = cur.errno if isinstance(cur, OSError) else None
        if code is None:
            m = _OS_ERROR.search(str(cur))
            code = int(m.group(1)) if m else None
        if code in STORAGE_ERRNOS:
            return code
        cur = cur.__cause__ or cur.__context__
    return None


class EpisodicError(Exception):
    """Root of every error this package raises on purpose."""


class ConfigError(EpisodicError, ValueError):
    """`setting` names the environment variable (or option) at fault."""

    def __init__(self, setting: str, reason: str) -> None:
        super().__init__(f"{setting}: {reason}")
        self.setting = setting
        self.reason = reason


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


class NotFoundError(EpisodicError, LookupError):
    """`kind` is user, episode or fact; `ident` what was asked for (never another
    user's row: a foreign id is reported exactly as a missing one)."""

    def __init__(self, kind: str, ident: str, hint: str = "") -> None:
        super().__init__(f"no {kind} {ident!r}" + (f": {hint}" if hint else ""))
        self.kind = kind
        self.ident = ident


class BusyError(EpisodicError):
    """Another run (a consolidation, a forget) held the user's lease for
    longer than the caller waits: nothing was done; try again later."""


class KeyReusedError(EpisodicError, ValueError):
    """An idempotency key came again with turns other than the first time's:
    nothing was written (the first answer would hide that these were not)."""
