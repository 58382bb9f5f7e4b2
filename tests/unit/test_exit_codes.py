"""Which failures the command line reports as "storage full or not writable"
(exit 4): an OSError with such an errno, or LanceDB's "(os error N)" text,
anywhere in the exception's chain; nothing else."""

from __future__ import annotations

import errno

import pytest

from episodic.errors import StorageError, storage_errno


def _chained(outer: Exception, inner: BaseException) -> Exception:
    try:
        try:
            raise inner
        except BaseException as e:
            raise outer from e
    except Exception as e:
        return e


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), errno.ENOSPC),
        (PermissionError(errno.EACCES, "Permission denied"), errno.EACCES),
        (OSError("LanceError(IO): Generic error: No space left on device (os error 28)"), 28),
        (RuntimeError("lance: Read-only file system (os error 30), /data/x.lance"), 30),
        (_chained(StorageError("write refused"), OSError(errno.EROFS, "ro")), errno.EROFS),
        (FileNotFoundError(errno.ENOENT, "missing"), None),
        (ValueError("k must be at least 1"), None),
        (RuntimeError("timed out (os error 110)"), None),
    ],
)
def test_storage_errno(exc: BaseException, code: int | None) -> None:
    assert storage_errno(exc) == code
