"""The ``--store URL`` option every command that reads or writes the store shares, and how it opens the store."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["open_cli_store", "store_option"]

F = TypeVar("F", bound=Callable[..., Any])


def store_option(fn: F) -> F:
    """The ``--store URL`` option shared by every command that reads or writes the store."""
    return click.option(
        "--store",
        "store_url",
        envvar="THREADLINE_STORE",
        default=None,
        metavar="URL",
        help="Store URL (sqlite:///file.db in this directory, sqlite:////abs/file.db, postgresql://…); default: "
        "$THREADLINE_STORE, else threadline.db in $THREADLINE_HOME or the user data directory.",
    )(fn)


def open_cli_store(url: str | None, *, reading: bool = False) -> Store:
    """Open the store a command was pointed at.

    Args:
        url: The ``--store`` URL (or ``THREADLINE_STORE``); None for the default store.
        reading: The command only reads: a SQLite file the URL names that does not exist is refused, naming it,
            instead of being created empty (the default store is made as every command makes it).

    Raises:
        UserError: for a URL `open_store` refuses, or a reading command's store file that does not exist.
    """
    from ..store import open_store

    return open_store(url or None, create=not (reading and url))
