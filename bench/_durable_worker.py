"""The floor workflows of ``bench_durable.py`` and a worker that serves them beside threadline's own.

- ``bench_bare_turn_2`` and ``bench_bare_turn_6``: DBOS workflows with the turn workflow's signature and output
  (``(app, conversation_id, text) -> {"stop_reason", "last_message_id"}``) made of 2 or 6 empty steps: 2 is what a
  threadline turn uses (``record_request``, ``continue_turn``), 6 is one step per model call and tool call of a
  3-round tool turn. Importing this module registers them.
- Run as a script, a worker: the same as ``threadline worker`` (the store's apps, DBOS beside the store, the queue
  ``threadline_turns`` partitioned by conversation) with the queue polled every ``--poll`` seconds, which
  ``threadline worker`` cannot be told yet. It serves threadline's turns and the floor workflows alike.

Run: ``python bench/_durable_worker.py --store URL --app module:attr --id ID --poll SECONDS`` (prints ``ready``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from types import FrameType

from dbos import DBOS

BARE_STEPS = {"bench_bare_turn_2": 2, "bench_bare_turn_6": 6}
"""The floor workflows by name, and how many empty steps each runs."""


@DBOS.step(name="bench_empty_step")
def empty_step() -> None:
    """A step that does nothing: what DBOS's journaling of one step costs on its own."""


def _bare(steps: int) -> dict[str, str | None]:
    for _ in range(steps):
        empty_step()
    return {"stop_reason": "end", "last_message_id": None}


@DBOS.workflow(name="bench_bare_turn_2")
def bare_turn_2(app: str, conversation_id: str, text: str) -> dict[str, str | None]:
    """Two empty steps, as many as a threadline turn records."""
    return _bare(BARE_STEPS["bench_bare_turn_2"])


@DBOS.workflow(name="bench_bare_turn_6")
def bare_turn_6(app: str, conversation_id: str, text: str) -> dict[str, str | None]:
    """Six empty steps: one per model call and tool call of a 3-round tool turn."""
    return _bare(BARE_STEPS["bench_bare_turn_6"])


def main() -> None:
    from threadline.durable import workflow
    from threadline.durable.apps import load_apps
    from threadline.durable.config import QUEUE_NAME, dbos_config, system_database
    from threadline.store import open_store

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--app", action="append", default=[])
    parser.add_argument("--id", default="worker")
    parser.add_argument("--poll", type=float, default=1.0, help="DBOS's queue polling interval, seconds")
    args = parser.parse_args()
    sys.path.insert(0, os.getcwd())
    apps = load_apps(args.app)
    store = open_store(args.store)
    workflow.install(store, apps)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
    DBOS(config=dbos_config(system_database(store, args.store), args.id))
    DBOS.launch()
    DBOS.register_queue(
        QUEUE_NAME, partition_concurrency=1, polling_interval_sec=args.poll, on_conflict="always_update"
    )
    print(f"worker {args.id} ready", flush=True)
    while not stop.wait(0.2):
        pass
    DBOS.destroy(workflow_completion_timeout_sec=10)
    store.close()


if __name__ == "__main__":
    main()
