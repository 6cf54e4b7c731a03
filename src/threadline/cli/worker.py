"""``threadline worker``: run queued turns (``threadline.durable``; the ``durable`` extra) until SIGTERM; and
``threadline enqueue``: queue one for the workers."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable

import click

from ..durable.worker import DEFAULT_POLL_SECONDS, STOP_GRACE_SECONDS  # imports no DBOS (a running worker does)
from ._errors import EXIT_OTHER, EXIT_USAGE, CommandError, friendly_errors
from ._params import FiniteFloatRange
from .store_option import store_option

__all__ = ["enqueue", "worker"]


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
@click.option(
    "--limit",
    "limits",
    multiple=True,
    metavar="PROVIDER=N/SECONDS",
    help="At most N turns of a provider's apps start per SECONDS, across all workers (e.g. openai=500/60); a "
    "setting of the provider's queue: the last worker started sets it for all.",
)
@click.option(
    "--poll",
    "poll_seconds",
    type=FiniteFloatRange(0.01, 60),
    default=DEFAULT_POLL_SECONDS,
    show_default=True,
    help="How often to look for queued turns, in seconds.",
)
@click.option(
    "--grace",
    "grace_seconds",
    type=click.IntRange(0, 3600),
    default=STOP_GRACE_SECONDS,
    show_default=True,
    help="On SIGTERM, how long to wait for the running turns before handing them back to their queue (another "
    "worker continues them from the log).",
)
@click.option(
    "--status", is_flag=True, help="List the queues, and the turns queued and running and on which worker; then exit."
)
@friendly_errors
def worker(
    store_url: str | None,
    apps: Iterable[str],
    worker_id: str,
    dbos_url: str | None,
    concurrency: int | None,
    limits: Iterable[str],
    poll_seconds: float,
    grace_seconds: int,
    status: bool,
) -> None:
    """Run turns queued with threadline.durable.Client (one at a time per conversation) until SIGTERM, which drains
    the worker: it finishes its running turns within --grace, or hands them back to their queue."""
    _need_dbos("worker")
    from ..durable.config import parse_limit
    from ..durable.worker import run_worker

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
    run_worker(
        store_url,
        apps,
        worker_id=worker_id,
        dbos_url=dbos_url,
        concurrency=concurrency,
        limits=[parse_limit(text) for text in limits],
        poll_seconds=poll_seconds,
        grace_seconds=grace_seconds,
        say=click.echo,
    )


def _need_dbos(command: str) -> None:
    """Refuse to run ``command`` without the ``dbos`` package (the ``durable`` extra)."""
    if importlib.util.find_spec("dbos") is None:
        raise CommandError(
            f"threadline {command} needs the 'durable' extra: pip install 'threadline[durable]'", EXIT_USAGE
        )


def _print_status(store_url: str, dbos_url: str | None) -> None:
    """Print the queues, then the turns they hold: one line each, oldest first."""
    from ..durable.client import Client
    from ..durable.status import queues, turns_in_flight

    with Client(store_url, dbos_url=dbos_url) as client:
        found = queues(client.dbos)
        turns = turns_in_flight(client.dbos)
    for queue in found:
        rate = f"at most {queue.limit} turns per {queue.period:g} s" if queue.limit else "no rate limit"
        each = f"{queue.worker_concurrency} at once per worker" if queue.worker_concurrency else "no limit per worker"
        click.echo(f"queue {queue.name}: {rate}, {each}")
    if not turns:
        click.echo("No turn is queued or running.")
        return
    for turn in turns:
        where = f"on {turn.worker}" if turn.worker else "waiting for a worker"
        since = turn.queued_at.strftime("%Y-%m-%d %H:%M:%S UTC") if turn.queued_at else "?"
        click.echo(
            f"{turn.state:<8} {where:<24} conversation {turn.conversation_id}  turn {turn.id}  queued {since}"
            f"  on {turn.queue}"
        )


@click.command()
@click.argument("text")
@store_option
@click.option("--app", required=True, help="The app (its attribute name, as the workers offer it) that answers.")
@click.option("--cid", "conversation_id", default=None, help="Continue this conversation (default: a new one).")
@click.option("--key", default=None, help="The turn's id: queuing the same key again queues nothing.")
@click.option("--dbos", "dbos_url", default=None, metavar="URL", help="DBOS's own database (default: from --store).")
@click.option(
    "--wait",
    "wait_seconds",
    type=FiniteFloatRange(0),
    default=None,
    metavar="SECONDS",
    help="Wait up to SECONDS for the turn to end and print its answer.",
)
@friendly_errors
def enqueue(
    text: str,
    store_url: str | None,
    app: str,
    conversation_id: str | None,
    key: str | None,
    dbos_url: str | None,
    wait_seconds: float | None,
) -> None:
    """Queue TEXT as a turn for the workers (threadline worker) and print the conversation and turn ids; with
    --wait, wait for the answer and print it."""
    _need_dbos("enqueue")
    from ..durable.apps import UnknownApp
    from ..durable.client import Client

    if not store_url:
        raise CommandError("threadline enqueue needs --store URL (the store the workers use)", EXIT_USAGE)
    with Client(store_url, dbos_url=dbos_url) as client:
        handle = client.submit(text, app=app, conversation_id=conversation_id, key=key)
        click.echo(f"conversation {handle.conversation_id}  turn {handle.id}")
        if wait_seconds is None:
            return
        try:
            outcome = handle.result(timeout=wait_seconds)
        except TimeoutError:
            raise CommandError(
                f"turn {handle.id} has not ended after {wait_seconds:g} s; it goes on (threadline worker --status)",
                EXIT_OTHER,
            ) from None
        except UnknownApp as exc:
            raise CommandError(f"turn {handle.id} failed: {exc}", EXIT_OTHER) from None
    if outcome.text is not None:
        click.echo(outcome.text)
    if outcome.stop_reason != "end":
        click.echo(f"(stopped: {outcome.stop_reason})", err=True)
