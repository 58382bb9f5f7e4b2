"""What every `episodic` command shares before and after it runs.

Before: the settings are loaded and checked (a bad value is a usage error);
the commands that call a model check its provider settings (a missing key);
the commands that run flows tie Prefect's temporary server to this process
(episodic.adapters.cli.ephemeral). After: each known failure is one line on
stderr and its exit code from `episodic.errors.ExitCode` (an unknown user,
episode or fact: 1, whichever command asked); anything else keeps its
traceback; the command's memory is closed (episodic.adapters.cli.context).

The failures are mapped where the command line is invoked (`GuardedGroup`),
so the console script and an in-process `CliRunner` answer alike.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

import typer
from typer import Abort, Exit
from typer.core import TyperCommand, TyperGroup

try:  # typer 0.2x carries its own click
    from typer._click.exceptions import ClickException, UsageError
except ImportError:  # pragma: no cover - an older typer on click itself
    from click.exceptions import ClickException, UsageError  # type: ignore[assignment]

from episodic.errors import ConfigError, ExitCode, NotFoundError, storage_errno

CommandFn = TypeVar("CommandFn", bound=Callable[..., Any])

# commands that call a model when the settings ask for one
MODEL_COMMANDS = frozenset({"consolidate", "reflect", "demo", "serve"})
# commands that run Prefect flows, so may start its temporary server
FLOW_COMMANDS = frozenset(
    {"consolidate", "reflect", "maintain", "demo", "serve", "bench", "api", "mcp", "soak"}
)


def fail(code: ExitCode, message: str) -> NoReturn:
    line = " ".join(message.split())
    sys.stderr.write(f"error: {line[:500]}\n")
    sys.stderr.flush()
    raise SystemExit(int(code))


def _storage_message(exc: BaseException, code: int) -> str:
    from episodic.config import HomeSettings

    where = getattr(exc, "filename", None) or str(HomeSettings().home)
    return f"storage full or not writable: {os.strerror(code)}" + (f" ({where})" if where else "")


@contextmanager
def guarded() -> Iterator[None]:
    """Known failures as one line and their exit code; the memory closed after."""
    from episodic.adapters.cli.context import release
    from storage.lease import LeaseBusy

    try:
        yield
    except (Exit, Abort, ClickException):
        raise  # click's own: their code and message already chosen
    except NotFoundError as e:
        fail(ExitCode.REJECTED, str(e))
    except ConfigError as e:
        fail(ExitCode.USAGE, str(e))
    except LeaseBusy as e:
        fail(ExitCode.BUSY, str(e))
    except Exception as e:
        code = storage_errno(e)
        if code is not None:
            fail(ExitCode.STORAGE, _storage_message(e, code))
        unanswered = _server_unanswered(e)
        if unanswered is None:
            raise
        fail(ExitCode.USAGE, unanswered)
    finally:
        release()


def _server_unanswered(e: Exception) -> str | None:
    """A server the command needs that did not answer: Prefect's API at a
    PREFECT_API_URL that is down or wrong, above all."""
    import httpx

    if isinstance(e, RuntimeError) and str(e).startswith("Failed to reach API"):
        return (
            f"{e} (is `prefect server start` running there? unset PREFECT_API_URL "
            "for Prefect's temporary API)"
        )
    if isinstance(e, httpx.ConnectError | httpx.ConnectTimeout):
        return f"a server did not answer: {e} (PREFECT_API_URL, or the model's endpoint?)"
    return None  # an answer it did not like is a bug to see whole


class GuardedGroup(TyperGroup):
    """The command group whose invocation (the callback, then the command)
    runs `guarded`."""

    def invoke(self, ctx: Any) -> Any:
        with guarded():
            return super().invoke(ctx)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """A usage error (a bad option value, an unknown option) as one
        `error:` line and exit 2, like every other refusal, not click's box."""
        if kwargs.get("standalone_mode", True) is False:
            return super().main(*args, **kwargs)
        try:
            code = super().main(*args, **{**kwargs, "standalone_mode": False})
        except UsageError as e:
            if not e.format_message():  # a group called bare: its help is the answer
                raise SystemExit(int(ExitCode.USAGE)) from None
            where = f" (see `{e.ctx.command_path} --help`)" if e.ctx is not None else ""
            fail(ExitCode.USAGE, e.format_message() + where)
        except Abort:
            sys.stderr.write("aborted\n")
            raise SystemExit(1) from None
        except ClickException as e:
            e.show()
            raise SystemExit(e.exit_code) from None
        raise SystemExit(code if isinstance(code, int) else 0)

    def get_params(self, ctx: Any) -> list[Any]:
        return _bare_flags(super().get_params(ctx))


def _bare_flags(params: list[Any]) -> list[Any]:
    """On/off flags without a value type in `--help` (typer 0.29 prints
    `<bool>` after `--json` and `--help`, as if they took a value)."""
    for p in params:
        if getattr(p, "is_flag", False) and p.metavar is None:
            p.metavar = ""
    return params


class FlagHelpCommand(TyperCommand):
    """A command whose on/off flags show no value type in `--help`
    (`_bare_flags`), and whose help's first paragraph reads as one line
    (rich markup keeps a docstring's line breaks, which cut the command
    list mid-sentence)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        text = kwargs.get("help")
        if text:
            first, sep, rest = inspect.cleandoc(text).partition("\n\n")
            kwargs["help"] = " ".join(first.split()) + sep + rest
        super().__init__(*args, **kwargs)

    def get_params(self, ctx: Any) -> list[Any]:
        return _bare_flags(super().get_params(ctx))


class GuardedTyper(typer.Typer):
    """A Typer app whose known failures exit with one line and their code,
    and whose commands show flags as flags in `--help`."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", GuardedGroup)
        super().__init__(**kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Callable[[CommandFn], CommandFn]:
        kwargs.setdefault("cls", FlagHelpCommand)
        return super().command(*args, **kwargs)


def preflight(ctx: typer.Context) -> None:
    """Check the settings before any command runs (a Typer callback)."""
    from episodic.config import load_settings

    settings = load_settings()
    command = ctx.invoked_subcommand or ""
    if command in MODEL_COMMANDS:
        from episodic.llm.factory import check_provider

        check_provider(settings)
    if command in FLOW_COMMANDS:
        from episodic.adapters.cli.ephemeral import tie

        tie()
