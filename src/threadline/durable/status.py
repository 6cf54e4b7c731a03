"""What the durable queue holds now: the turns queued and running, and on which worker (``threadline worker
--status``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .config import QUEUE_PREFIX, TURN_WORKFLOWS

if TYPE_CHECKING:
    from dbos import DBOSClient

__all__ = ["QueueState", "TurnState", "queues", "turns_in_flight"]

_STATES = {"ENQUEUED": "queued", "PENDING": "running"}


@dataclass(frozen=True, slots=True)
class TurnState:
    """A turn the queue holds.

    Attributes:
        id: The turn's id (its DBOS workflow id; a ``key=`` given to ``submit``).
        conversation_id: The conversation it runs on.
        state: ``"queued"`` or ``"running"``.
        worker: The id of the worker running it (``--id``), None while queued.
        queued_at: When it was queued.
        queue: The queue it is on (``threadline_turns.<provider>``).
    """

    id: str
    conversation_id: str | None
    state: str
    worker: str | None
    queued_at: datetime | None
    queue: str | None = None


@dataclass(frozen=True, slots=True)
class QueueState:
    """A provider's queue of turns, as the last worker started set it.

    Attributes:
        name: ``threadline_turns.<provider>``.
        provider: The provider its apps' models are on.
        limit: At most this many turns start per ``period`` seconds, across all workers (None: no rate limit).
        period: The rate limit's window in seconds (None: no rate limit).
        worker_concurrency: At most this many of its turns at once on one worker (None: no limit).
    """

    name: str
    provider: str
    limit: int | None
    period: float | None
    worker_concurrency: int | None


def queues(dbos: DBOSClient) -> list[QueueState]:
    """The turns' queues (one per provider workers have served), by name."""
    found = []
    for queue in dbos.list_queues():
        if not queue.name.startswith(QUEUE_PREFIX):
            continue
        rate = queue.limiter
        found.append(
            QueueState(
                name=queue.name,
                provider=queue.name.removeprefix(QUEUE_PREFIX),
                limit=rate["limit"] if rate else None,
                period=rate["period"] if rate else None,
                worker_concurrency=queue.worker_concurrency,
            )
        )
    return sorted(found, key=lambda state: state.name)


def turns_in_flight(dbos: DBOSClient, limit: int = 1000) -> list[TurnState]:
    """The turns queued or running, on every provider's queue, oldest first (at most ``limit``)."""
    found = dbos.list_workflows(
        status=list(_STATES), name=list(TURN_WORKFLOWS), load_input=False, load_output=False, limit=limit
    )
    return [
        TurnState(
            id=status.workflow_id,
            conversation_id=status.queue_partition_key,
            state=_STATES.get(str(status.status), str(status.status).lower()),
            worker=status.executor_id if str(status.status) == "PENDING" else None,
            queued_at=datetime.fromtimestamp(status.created_at / 1000, UTC) if status.created_at else None,
            queue=status.queue_name,
        )
        for status in found
    ]
