"""One place where CLI commands turn errors into one clear line and an exit code."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..errors import CapabilityError, ModelError, ThreadlineError, UserError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USAGE = 2
EXIT_MODEL = 3
EXIT_OTHER = 1


class CommandError(click.ClickException):
    """A failure shown as ``Error: <message>`` with a chosen exit code; the message often quotes a server, a model
    or a file, so its control characters are shown escaped."""

    def __init__(self, message: str, exit_code: int = EXIT_OTHER) -> None:
        from ._terminal import visible

        super().__init__(visible(message))
        # Click declares ``exit_code`` a class variable (``ClassVar[int]`` from 8.4.2 on); click reads it from the
        # instance, whose own value shadows the class's.
        vars(self)["exit_code"] = exit_code


def conversation_id(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The ``--cid`` options' check: an empty id names no conversation (it used to start a new one silently)."""
    if value is not None and not value.strip():
        raise click.BadParameter("an empty id names no conversation", ctx=ctx, param=param)
    return value


def silence_stdout() -> None:
    """Point stdout at the null device, after its reader went away: what is still buffered, and whatever is written
    later, goes nowhere instead of failing again when Python flushes it at exit."""
    import os
    import sys

    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):  # stdout is no file (a test's capture): nothing to redirect
        pass


def friendly_errors(fn: F) -> F:
    """Turn threadline errors (and interrupts) into one line and a non-zero exit, no traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except click.ClickException:
            raise
        except (UserError, CapabilityError) as exc:
            raise CommandError(str(exc), EXIT_USAGE) from None
        except ModelError as exc:
            raise CommandError(f"model call failed: {exc}", EXIT_MODEL) from None
        except ThreadlineError as exc:
            raise CommandError(str(exc), EXIT_OTHER) from None
        except KeyboardInterrupt:
            raise CommandError("interrupted", 130) from None
        except BrokenPipeError:
            # The reader of stdout went away (`… | head`): nothing more is shown, and that is no error.
            silence_stdout()
            return None
        except OSError as exc:
            raise CommandError(str(exc), EXIT_OTHER) from None

    return wrapper  # type: ignore[return-value]
