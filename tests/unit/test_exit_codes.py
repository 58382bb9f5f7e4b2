"""Which failures the command line reports as "storage full or not writable"
(exit 4): an OSError with such an errno, or LanceDB's "(os error N)" text,
anywhere in the exception's chain; nothing else. And that every known failure a
command raises is one `error:` line and its exit code."""

from __future__ import annotations

import errno

import pytest

from episodic.errors import ConfigError, NotFoundError, StorageError, storage_errno


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


@pytest.mark.parametrize(
    ("exc", "code", "line"),
    [
        (NotFoundError("user", "nobody", "nothing stored"), 1, "error: no user 'nobody': nothing"),
        (NotFoundError("episode", "ab12"), 1, "error: no episode 'ab12'"),
        (ConfigError("EPISODIC_K", "must be\nan integer"), 2, "error: EPISODIC_K: must be an"),
        (OSError(errno.ENOSPC, "No space left on device"), 4, "error: storage full"),
    ],
)
def test_a_known_failure_is_one_line_and_its_exit_code(
    exc: Exception, code: int, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whichever command raised it (the guard wraps the command line's invocation)."""
    from episodic.adapters.cli.guard import guarded

    with pytest.raises(SystemExit) as done, guarded():
        raise exc
    assert done.value.code == code
    err = capsys.readouterr().err
    assert err.startswith(line) and err.count("\n") == 1


def test_anything_else_keeps_its_traceback() -> None:
    from episodic.adapters.cli.guard import guarded

    with pytest.raises(KeyError), guarded():
        raise KeyError("a bug")
