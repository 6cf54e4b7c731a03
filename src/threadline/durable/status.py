"""What the durable queue holds now: the turns queued and running, and on which worker (``threadline worker
--status``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .config import QUEUE_NAME

if TYPE_CHECKING:
    from dbos import DBOSClient

__all__ = ["TurnState", "turns_in_flight"]

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
    """

    id: str
    conversation_id: str | None
    state: str
    worker: str | None
    queued_at: datetime | None


def turns_in_flight(dbos: DBOSClient, limit: int = 1000) -> list[TurnState]:
    """The turns queued or running on the turns' queue, oldest first (at most ``limit``)."""
    found = dbos.list_workflows(
        status=list(_STATES), queue_name=QUEUE_NAME, load_input=False, load_output=False, limit=limit
    )
    return [
        TurnState(
            id=status.workflow_id,
            conversation_id=status.queue_partition_key,
            state=_STATES.get(str(status.status), str(status.status).lower()),
            worker=status.executor_id if str(status.status) == "PENDING" else None,
            queued_at=datetime.fromtimestamp(status.created_at / 1000, UTC) if status.created_at else None,
        )
        for status in found
    ]
