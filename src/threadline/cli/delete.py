"""``threadline logs delete ID``: delete a stored conversation with everything it left in the store.

The store's own deletion does the work (`Store.delete_conversation`, one transaction): the messages and their
search index, the artifacts, the cached summaries and the pages it made; a page that a fork of it still shows
passes to that fork instead of going, so the fork keeps working. Deleting cannot be undone, so the command asks
first on a terminal, and off a terminal it wants ``--yes``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from ._errors import EXIT_USAGE, CommandError, friendly_errors
from .store_option import open_cli_store, store_option

if TYPE_CHECKING:
    from ..store import Store

__all__ = ["delete"]


@click.command("delete")
@click.argument("conversation_id", metavar="ID")
@click.option("-y", "--yes", is_flag=True, help="Delete without asking (needed off a terminal).")
@store_option
@friendly_errors
def delete(conversation_id: str, yes: bool, store_url: str | None) -> None:
    """Delete conversation ID: its messages, artifacts and pages (a page a fork of it shows stays, with the fork)."""
    from ._terminal import visible

    with open_cli_store(store_url) as store:
        info = store.get_conversation(conversation_id)  # an unknown id is refused before anything is asked
        described = f"conversation {info.id} ({visible(info.title or 'untitled')}, {info.message_count} messages)"
        if not yes:
            if not sys.stdin.isatty():
                raise CommandError(f"not deleting {described}: add --yes to delete without asking", EXIT_USAGE)
            if not click.confirm(f"Delete {described}? This cannot be undone", default=False, err=True):
                raise CommandError("nothing was deleted", EXIT_USAGE)
        pages = store.list_pages(info.id)
        forks = store.list_forks(info.id)
        store.delete_conversation(info.id)
        kept = [page for page in pages if _page_owner(store, page.id) not in (None, info.id)]
    click.echo(f"deleted {described}", err=True)
    if kept:
        click.echo(
            f"{len(kept)} of its pages stay: a fork of it ({', '.join(fork.id for fork in forks)}) shows them",
            err=True,
        )


def _page_owner(store: Store, page_id: str) -> str | None:
    """The conversation a page belongs to now (None when it was deleted)."""
    from ..errors import StoreError

    try:
        return store.get_page(page_id).conversation_id
    except StoreError:
        return None
