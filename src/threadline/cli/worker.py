"""``threadline worker``: run queued turns (``threadline.durable``; the ``durable`` extra) until SIGTERM."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

import click

from ._errors import EXIT_USAGE, CommandError, friendly_errors
from .store_option import store_option

__all__ = ["worker"]


@click.command()
@store_option
@click.option("--app", "apps", multiple=True, metavar="MODULE:ATTR", help="An app (a PromptBuilder) to serve.")
@click.option(
    "--id",
    "worker_id",
    default="worker",
    show_default=True,
    help="This worker's id: each worker running at once needs its own; a restarted worker given the same id "
    "recovers the turns it was running.",
)
@click.option("--dbos", "dbos_url", default=None, metavar="URL", help="DBOS's own database (default: from --store).")
@click.option(
    "--concurrency",
    type=click.IntRange(1),
    default=None,
    help="At most this many turns at once on one worker; a setting of the shared queue: the last worker started sets "
    "it for all.",
)
@click.option("--status", is_flag=True, help="List the turns queued and running, and on which worker; then exit.")
@friendly_errors
def worker(
    store_url: str | None,
    apps: Iterable[str],
    worker_id: str,
    dbos_url: str | None,
    concurrency: int | None,
    status: bool,
) -> None:
    """Run turns queued with threadline.durable.Client (one at a time per conversation) until SIGTERM."""
    try:
        from ..durable.worker import run_worker
    except ImportError:
        raise CommandError(
            "threadline worker needs the 'durable' extra: pip install 'threadline[durable]'", EXIT_USAGE
        ) from None
    if not store_url:
        raise CommandError("threadline worker needs --store URL (the store every worker and client shares)", EXIT_USAGE)
    if status:
        _print_status(store_url, dbos_url)
        return
    if not apps:
        raise CommandError("threadline worker needs at least one --app MODULE:ATTR to serve", EXIT_USAGE)
    if not worker_id.strip():
        raise CommandError("--id must not be empty", EXIT_USAGE)
    # "--app myapp:chat" means ./myapp.py, as "-T" does for tools.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    run_worker(store_url, apps, worker_id=worker_id, dbos_url=dbos_url, concurrency=concurrency, say=click.echo)


def _print_status(store_url: str, dbos_url: str | None) -> None:
    """Print the turns the queue holds: one line each, oldest first."""
    from ..durable.client import Client
    from ..durable.status import turns_in_flight

    with Client(store_url, dbos_url=dbos_url) as client:
        turns = turns_in_flight(client.dbos)
    if not turns:
        click.echo("No turn is queued or running.")
        return
    for turn in turns:
        where = f"on {turn.worker}" if turn.worker else "waiting for a worker"
        since = turn.queued_at.strftime("%Y-%m-%d %H:%M:%S UTC") if turn.queued_at else "?"
        click.echo(f"{turn.state:<8} {where:<24} conversation {turn.conversation_id}  turn {turn.id}  queued {since}")
