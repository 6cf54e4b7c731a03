"""A worker process: runs queued turns (``threadline worker``; see "Running on many workers" in the README).

A worker launches DBOS under an executor id (``--id``, default ``worker``) and takes turns from the queues of its
apps' providers (``threadline_turns.<provider>``, `threadline.durable.config.queue_name`), one turn at a time per
conversation across all workers; ``--limit provider=N/seconds`` is the rate limit of a provider's queue, shared by
every worker. At start, the worker records which queue each of its apps is served on (a `Client` queues there).

At launch DBOS recovers the turns that were running under this executor id when a worker with it died: they
continue from the conversation's log. So each worker running at the same time needs its own id, and a restarted
worker keeps the id it had. A worker refuses to start when it would recover a turn of an app it does not have.

SIGTERM (or Ctrl-C) drains a worker: it takes no new turn, waits up to ``--grace`` seconds (`STOP_GRACE_SECONDS`)
for the turns it is running, and hands the ones still running back to their queue, where another worker continues
them from the log.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import FrameType
from typing import TYPE_CHECKING

from ..errors import UserError
from ..store import open_store
from .apps import app_provider, load_apps
from .config import (
    APP_NAME,
    TURN_WORKFLOWS,
    RateLimit,
    dbos_config,
    queue_name,
    system_database,
)

if TYPE_CHECKING:
    from dbos import DBOSClient

    from ..builder import PromptBuilder

__all__ = ["DEFAULT_POLL_SECONDS", "STOP_GRACE_SECONDS", "run_worker"]

STOP_GRACE_SECONDS = 10
"""How long a stopping worker waits by default for its running turns before it hands them back to their queue."""
DEFAULT_POLL_SECONDS = 0.2
"""How often a worker looks for queued turns (DBOS's queue polling interval; DBOS's own default is 1 s, which adds
up to a second of waiting to every turn)."""


def run_worker(
    store_url: str,
    app_specs: Iterable[str],
    *,
    worker_id: str = "worker",
    dbos_url: str | None = None,
    concurrency: int | None = None,
    limits: Sequence[RateLimit] = (),
    poll_seconds: float = DEFAULT_POLL_SECONDS,
    grace_seconds: int = STOP_GRACE_SECONDS,
    say: Callable[[str], None] = print,
) -> None:
    """Run turns until SIGTERM or SIGINT, then drain: take no new turn, wait up to ``grace_seconds`` for the
    running ones, hand those still running back to their queue and return (a second signal ends the process at
    once; a worker restarted with ``worker_id`` then recovers the turns it was running).

    Args:
        store_url: The store (SQLite or PostgreSQL) the turns' conversations are in.
        app_specs: The apps, each ``module:attr`` naming a `PromptBuilder`.
        worker_id: DBOS's executor id: unique among running workers, the same across restarts of one worker.
        dbos_url: DBOS's own database (default: derived from the store, see `threadline.durable.config`).
        concurrency: At most this many turns of one provider at once on one worker (None: no limit). Like
            ``limits``, a setting of the provider's queue, stored with it: the worker started last sets it for all.
        limits: Rate limits of providers' queues (``--limit openai=500/60``).
        poll_seconds: How often to look for queued turns.
        grace_seconds: How long a stopping worker waits for its running turns before handing them back.
        say: Where the ready line and refusals go.

    Raises:
        UserError: for a bad app or limit, a store the worker cannot share, or turns this worker was running whose
            app it does not have (nothing is started then).
    """
    from dbos import DBOS, DBOSClient

    from . import workflow

    apps = load_apps(app_specs)
    providers = {name: app_provider(builder) for name, builder in apps.items()}
    limit_of = _limits_by_provider(limits, set(providers.values()))
    if not poll_seconds > 0:
        raise UserError(f"the polling interval must be > 0 seconds, got {poll_seconds}")
    if grace_seconds < 0:
        raise UserError(f"the grace must be >= 0 seconds, got {grace_seconds}")
    store = open_store(store_url)
    database = system_database(store, store_url, dbos_url)
    # DBOS's tables exist before anything reads them (a Client may also have made them).
    DBOS.migrate(database.url, schema=database.schema)
    client = DBOSClient(system_database_url=database.url, dbos_system_schema=database.schema, application_name=APP_NAME)
    try:
        _refuse_foreign_turns(client, worker_id, apps)
        workflow.install(store, apps)
        queues = sorted({queue_name(provider) for provider in providers.values()})
        DBOS(config=dbos_config(database, worker_id))
        DBOS.listen_queues(queues)
        stop = _stop_on_signals()
        DBOS.launch()
        for provider in sorted(set(providers.values())):
            rate = limit_of.get(provider)
            DBOS.register_queue(
                queue_name(provider),
                partition_concurrency=1,
                worker_concurrency=concurrency,
                limiter={"limit": rate.limit, "period": rate.period} if rate else None,
                polling_interval_sec=poll_seconds,
                on_conflict="always_update",
            )
        for name, provider in sorted(providers.items()):
            workflow.offer_app(name, queue_name(provider), worker_id)
        say(f"worker {worker_id} ready: apps {', '.join(sorted(apps))}; queues {', '.join(queues)}")
        sys.stdout.flush()
        # Python runs a signal's handler in this thread, but the kernel may deliver the signal to any of DBOS's:
        # this thread must wake now and then to run it.
        while not stop.wait(0.2):
            pass
        say(f"worker {worker_id} stopping: no new turns; waiting up to {grace_seconds} s for the running ones")
        sys.stdout.flush()
        DBOS.destroy(workflow_completion_timeout_sec=grace_seconds)
        handed_back = _hand_back(client, worker_id)
    finally:
        client.destroy()
    if handed_back:
        say(f"worker {worker_id} stopped; handed back {handed_back} running turn(s) to their queues")
        sys.stdout.flush()
        # The turns' threads are still running here: end now, so that only the worker that takes them over writes.
        os._exit(0)
    say(f"worker {worker_id} stopped")


def _limits_by_provider(limits: Sequence[RateLimit], served: set[str]) -> dict[str, RateLimit]:
    """The limits by provider, refusing two for one provider or one for a provider no app of this worker is on."""
    found: dict[str, RateLimit] = {}
    for rate in limits:
        if rate.provider in found:
            raise UserError(f"two limits for provider {rate.provider!r}: give one --limit per provider")
        if rate.provider not in served:
            raise UserError(
                f"--limit {rate.provider}=… names a provider none of this worker's apps is on "
                f"(they are on: {', '.join(sorted(served))})"
            )
        found[rate.provider] = rate
    return found


def _stop_on_signals() -> threading.Event:
    """An event set by the first SIGTERM or SIGINT; a second one ends the process at once."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        for each in (signal.SIGTERM, signal.SIGINT):
            signal.signal(each, signal.SIG_DFL)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
    return stop


def _running_here(client: DBOSClient, worker_id: str) -> list[tuple[str, str, str | None]]:
    """The turns DBOS has as running under executor ``worker_id``: (turn id, app, queue)."""
    found = client.list_workflows(
        status="PENDING", executor_id=worker_id, name=list(TURN_WORKFLOWS), load_input=True, load_output=False
    )
    return [
        (status.workflow_id, str(status.input["args"][0]) if status.input else "?", status.queue_name)
        for status in found
    ]


def _refuse_foreign_turns(client: DBOSClient, worker_id: str, apps: Mapping[str, PromptBuilder]) -> None:
    """Refuse to start a worker that would recover (as ``worker_id``) turns of apps it does not have: they would
    fail on it, while the worker that began them, restarted with its apps, finishes them."""
    foreign = [(turn, app) for turn, app, _ in _running_here(client, worker_id) if app not in apps]
    if not foreign:
        return
    names = sorted({app for _, app in foreign})
    turns = ", ".join(turn for turn, _ in foreign[:5]) + (" …" if len(foreign) > 5 else "")
    raise UserError(
        f"worker {worker_id} was running {len(foreign)} turn(s) of app(s) {', '.join(map(repr, names))} when it "
        f"stopped ({turns}), and this worker does not have them (its apps: {', '.join(sorted(apps))}); start it "
        f"again with --app for {', '.join(f'module:{name}' for name in names)} to finish them"
    )


def _hand_back(client: DBOSClient, worker_id: str) -> int:
    """Put the turns still running on this worker back on their queues (another worker continues them from the
    log); returns how many."""
    count = 0
    for turn, _, queue in _running_here(client, worker_id):
        client.resume_workflow(turn, queue_name=queue)
        count += 1
    return count
