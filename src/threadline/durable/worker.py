"""A worker process: runs queued turns (``threadline worker``; see "Running on many workers" in the README).

A worker launches DBOS under an executor id (``--id``, default ``worker``) and takes turns from the queue
``threadline_turns``, one turn at a time per conversation across all workers. At launch DBOS recovers the turns
that were running under this executor id when a worker with it died: they go back on the queue and continue from
the conversation's log. So each worker running at the same time needs its own id, and a restarted worker keeps
the id it had.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterable
from types import FrameType

from ..store import open_store
from .apps import load_apps
from .config import QUEUE_NAME, dbos_config, system_database

__all__ = ["run_worker"]

STOP_GRACE_SECONDS = 10
"""How long a stopping worker waits for its running turns; turns still running then are recovered by the next
worker started with its id."""


def run_worker(
    store_url: str,
    app_specs: Iterable[str],
    *,
    worker_id: str = "worker",
    dbos_url: str | None = None,
    concurrency: int | None = None,
    say: Callable[[str], None] = print,
) -> None:
    """Run turns until SIGTERM or SIGINT, then stop taking new ones and return once DBOS has shut down (it waits
    up to `STOP_GRACE_SECONDS` for running turns; a second signal ends the process at once, and a worker restarted
    with ``worker_id`` recovers the turns it was running).

    Args:
        store_url: The store (SQLite or PostgreSQL) the turns' conversations are in.
        app_specs: The apps, each ``module:attr`` naming a `PromptBuilder`.
        worker_id: DBOS's executor id: unique among running workers, the same across restarts of one worker.
        dbos_url: DBOS's own database (default: derived from the store, see `threadline.durable.config`).
        concurrency: At most this many turns at once on one worker (a setting of the queue, so all workers share
            the latest one given; None: no limit).
        say: Where the ready line goes.

    Raises:
        UserError: for a bad app or a store the worker cannot share.
    """
    from dbos import DBOS

    from . import workflow

    apps = load_apps(app_specs)
    store = open_store(store_url)
    database = system_database(store, store_url, dbos_url)
    workflow.install(store, apps)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        for each in (signal.SIGTERM, signal.SIGINT):
            signal.signal(each, signal.SIG_DFL)  # a second signal ends the process at once

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
    DBOS(config=dbos_config(database, worker_id))
    DBOS.launch()
    DBOS.register_queue(
        QUEUE_NAME, partition_concurrency=1, worker_concurrency=concurrency, on_conflict="always_update"
    )
    say(f"worker {worker_id} ready: apps {', '.join(sorted(apps))}")
    sys.stdout.flush()
    while not stop.wait(1.0):
        pass
    # Turns still running after the grace keep the process until they end (a second signal ends it at once;
    # the turn is then recovered from the log by the next worker with this id).
    DBOS.destroy(workflow_completion_timeout_sec=STOP_GRACE_SECONDS)
