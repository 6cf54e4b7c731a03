"""``threadline logs fork ID --at MSG``: copy a stored conversation up to a message into a new one, to continue it
another way (another model, another question) without touching the original."""

from __future__ import annotations

import click

from ._errors import friendly_errors
from .store_option import open_cli_store, store_option

__all__ = ["fork"]


@click.command("fork")
@click.argument("conversation_id", metavar="ID")
@click.option(
    "--at",
    "at",
    metavar="MSG",
    default=None,
    help="The id of the last message to keep (its tool results come along); default: the latest message.",
)
@click.option(
    "--title",
    default=None,
    help="The fork's title (default: the original's title with '(fork)' added, or '(fork 2)', '(fork 3)'… when "
    "that is taken).",
)
@store_option
@friendly_errors
def fork(conversation_id: str, at: str | None, title: str | None, store_url: str | None) -> None:
    """Fork conversation ID at message MSG: prints the new conversation's id."""
    with open_cli_store(store_url) as store:
        if at is None:
            last = store.read_tail(conversation_id, 1).messages
            if not last:
                raise click.ClickException(f"conversation {conversation_id} has no messages to fork")
            at = last[0].id
        info = store.fork_conversation(conversation_id, at, title=title)
    from ._terminal import visible

    click.echo(info.id)
    click.echo(
        # A message id read from an imported file may hold anything: shown escaped.
        f"forked {conversation_id}@{visible(at)} into {info.id} ({info.message_count} messages); "
        f'continue it with: threadline prompt --cid {info.id} "…"',
        err=True,
    )
