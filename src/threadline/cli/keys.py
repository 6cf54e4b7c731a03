"""``threadline keys set NAME``, ``keys list`` and ``keys path``: the API keys saved in the key file.

The providers read a key from the environment first, then from this file (see `threadline.models.keys`). Nothing here
prints a key: ``set`` reads it from the terminal without echo (or from stdin), ``list`` prints names only.
"""

from __future__ import annotations

import sys

import click

from ._errors import friendly_errors

__all__ = ["keys"]


@click.group("keys")
def keys() -> None:
    """API keys saved for the providers (read when the environment has none): set one, list them, show the file."""


@keys.command("set")
@click.argument("name")
@friendly_errors
def set_(name: str) -> None:
    """Save the key NAME (openai, anthropic…), typed without echo or piped to stdin; it is never printed.

    The file is readable by you only (mode 0600). A key in the environment (OPENAI_API_KEY…) is used before it.
    """
    from ..models.keys import save_key

    if sys.stdin.isatty():
        value = click.prompt(f"key for {name}", hide_input=True, err=True, default="", show_default=False)
    else:
        value = sys.stdin.read()
    path = save_key(name, value)
    click.echo(f"saved the {name} key in {path}", err=True)


@keys.command("list")
@friendly_errors
def list_() -> None:
    """List the names of the saved keys (never the keys)."""
    from ..models.keys import stored_key_names

    names = stored_key_names()
    if not names:
        click.echo("no keys saved (save one with: threadline keys set openai)", err=True)
    for name in names:
        click.echo(name)


@keys.command("path")
@friendly_errors
def path() -> None:
    """Print where the key file is (it may not exist yet)."""
    from ..models.keys import key_file_path

    click.echo(str(key_file_path()))
