"""The ``threadline`` command line (the ``cli`` extra: click + rich).

Commands live in their own modules and are imported only when run, so ``threadline --help`` and each command pay
only for what they use. Errors reach the user as one line and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

try:
    import click
except ImportError as exc:  # pragma: no cover - depends on the install
    raise SystemExit("the threadline command needs the 'cli' extra: pip install 'threadline[cli]'") from exc

__all__ = ["main"]

# command name -> "module:attribute" under threadline.cli
COMMANDS: dict[str, str] = {
    "prompt": "prompt:prompt",
    "chat": "prompt:chat",
    "demo": "demo:demo",
    "logs": "logs:logs",
    "export": "transfer:export",
    "import": "transfer:import_",
    "models": "models:models",
    "serve": "serve:serve",
    "awaiting": "approvals:awaiting",
    "approve": "approvals:approve",
    "deny": "approvals:deny",
    "submit": "approvals:submit",
    "resume": "approvals:resume",
    "worker": "worker:worker",
    "enqueue": "worker:enqueue",
    "keys": "keys:keys",
}


class LazyGroup(click.Group):
    """A group whose commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if self._load(name) is not None)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self._load(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """The command ``args`` name; a misspelt one (``promt``) is refused with the close matches named."""
        name = click.utils.make_str(args[0])
        if name not in COMMANDS and not name.startswith("-") and not ctx.resilient_parsing:
            import difflib

            close = difflib.get_close_matches(name, sorted(COMMANDS), n=3, cutoff=0.6)
            if close:
                ctx.fail(f"No such command {name!r}. Did you mean {' or '.join(repr(each) for each in close)}?")
        return super().resolve_command(ctx, args)

    def _load(self, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module_name, _, attribute = target.partition(":")
        try:
            module = importlib.import_module(f"{__name__}.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{module_name}":
                return None  # not built yet
            raise
        command: click.Command = getattr(module, attribute)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="threadline")
def cli() -> None:
    """threadline: LLM conversations with tools, kept as one log."""
    _tolerant_output()
    _quiet_driver_logs()


def _quiet_driver_logs() -> None:
    """Keep the PostgreSQL driver's own log lines off the terminal ("discarding closed connection …", "error
    connecting in 'threadline' …" when the server restarts): what a command needs to say about the store it says
    itself, as one line. Python prints a library's warnings to stderr when no logging is configured, and a command
    is the program that owns its terminal; the library leaves logging to the programs that use it, which may well
    want these lines in their own logs."""
    import logging

    for name in ("psycopg", "psycopg_pool"):
        driver = logging.getLogger(name)
        driver.addHandler(logging.NullHandler())
        driver.propagate = False


def _tolerant_output() -> None:
    """Characters the terminal's encoding cannot show (``PYTHONIOENCODING=latin-1``, an ASCII console) come out as
    ``?``: printing an answer must not fail, let alone be logged as a failure of the model call it came from."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", "strict") == "strict":
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):  # a stream that cannot change (detached, closed): left as it is
                pass


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``threadline`` command."""
    return cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="threadline")
