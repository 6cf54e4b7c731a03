"""What DBOS knows of the durable turns: the turns queued and running, and on which worker (``threadline worker
--status``), and each conversation's turns with how they ended (the viewer shows them beside the messages).

Only ids, states and short texts are read: a turn's messages are in the store. A failed turn's error is shown on one
line with secrets masked (`threadline._masking`), as every error text meant for people is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .._exception_text import readable_message, type_name
from .._masking import environment_secrets, mask_secrets
from .config import QUEUE_PREFIX, RESUME_WORKFLOW_NAME, TURN_WORKFLOWS

if TYPE_CHECKING:
    from dbos import DBOSClient, WorkflowStatus

__all__ = [
    "ConversationTurn",
    "QueueState",
    "TurnState",
    "conversation_turns",
    "conversations_in_flight",
    "queues",
    "turns_in_flight",
]

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


_IN_FLIGHT = ("ENQUEUED", "PENDING", "DELAYED")
_ENDED = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")
_MAX_ERROR = 500  # characters of a failed turn's error shown


@dataclass(frozen=True, slots=True)
class ConversationTurn:
    """A durable turn of one conversation, as DBOS recorded it.

    Attributes:
        id: The turn's id (its DBOS workflow id).
        kind: ``"turn"`` (a queued request) or ``"resumption"`` (the going-on after decided calls: no request).
        state: ``"queued"``, ``"running"``, ``"waiting"`` (it ended with calls waiting for a person), ``"done"``,
            ``"failed"`` or ``"cancelled"``.
        worker: The id of the worker running it or that ran it (``--id``); None while queued.
        app: The app it was queued for.
        queued_at: When it was queued.
        ended_at: When it ended (None while queued or running).
        error: For a failed turn, its error on one line (type and message, secrets masked).
    """

    id: str
    kind: str
    state: str
    worker: str | None
    app: str | None
    queued_at: datetime | None
    ended_at: datetime | None = None
    error: str | None = None

    @property
    def request_id(self) -> str | None:
        """The id of the user message the turn records (``req-<id>``; None for a resumption, which records none).
        A queued turn has not recorded it yet, and a turn that failed before recording never does."""
        return f"req-{self.id}" if self.kind == "turn" else None


def conversation_turns(
    dbos: DBOSClient,
    conversation_id: str,
    *,
    turn_ids: Iterable[str] = (),
    by_attributes: bool = True,
    limit: int = 50,
    scan: int = 500,
) -> list[ConversationTurn]:
    """The durable turns of conversation ``conversation_id``, oldest first: every turn queued or running, and the
    ``limit`` newest that ended.

    Args:
        dbos: A client of the store's DBOS system database.
        conversation_id: The conversation.
        turn_ids: Ids of turns known to be the conversation's (from the ``req-<id>`` messages of its log): they are
            read by id, however old.
        by_attributes: Whether DBOS filters by the workflows' attributes (PostgreSQL). DBOS cannot on SQLite: pass
            False, and the ``scan`` newest turns of the store are read and filtered here.
        limit: At most this many ended turns.
        scan: Without ``by_attributes``, how many of the store's newest turns are looked through.
    """
    wanted = {"conversation_id": conversation_id} if by_attributes else None
    found = dbos.list_workflows(
        name=list(TURN_WORKFLOWS), status=list(_IN_FLIGHT), attributes=wanted, load_input=False, load_output=False
    )
    ended = dbos.list_workflows(
        name=list(TURN_WORKFLOWS),
        status=list(_ENDED),
        attributes=wanted,
        sort_desc=True,
        limit=limit if by_attributes else scan,
        load_input=False,
        load_output=False,
    )
    ended = [status for status in ended if _conversation_of(status) == conversation_id][:limit]
    ids = {status.workflow_id for status in ended} | {
        i for i in turn_ids if i not in {status.workflow_id for status in found}
    }
    if ids:
        # Outputs and errors only of the turns shown (a stop reason, a short error): read by id.
        found += dbos.list_workflows(workflow_ids=sorted(ids), name=list(TURN_WORKFLOWS), load_input=False)
    by_id = {status.workflow_id: status for status in found if _conversation_of(status) == conversation_id}
    turns = [_turn(status) for status in by_id.values()]
    return sorted(turns, key=lambda turn: (turn.queued_at or datetime.min.replace(tzinfo=UTC), turn.id))


def conversations_in_flight(dbos: DBOSClient, limit: int = 1000) -> dict[str, list[ConversationTurn]]:
    """The turns queued or running, by conversation (at most ``limit`` turns, oldest first)."""
    found = dbos.list_workflows(
        name=list(TURN_WORKFLOWS), status=list(_IN_FLIGHT), load_input=False, load_output=False, limit=limit
    )
    by_conversation: dict[str, list[ConversationTurn]] = {}
    for status in found:
        conversation_id = _conversation_of(status)
        if conversation_id is not None:
            by_conversation.setdefault(conversation_id, []).append(_turn(status))
    return by_conversation


def _conversation_of(status: WorkflowStatus) -> str | None:
    attributes = status.attributes if isinstance(status.attributes, dict) else {}
    conversation_id = attributes.get("conversation_id", status.queue_partition_key)
    return str(conversation_id) if conversation_id is not None else None


def _turn(status: WorkflowStatus) -> ConversationTurn:
    dbos_state = str(status.status)
    attributes = status.attributes if isinstance(status.attributes, dict) else {}
    app = attributes.get("app")
    error = None
    if dbos_state in ("ENQUEUED", "DELAYED"):
        state = "queued"
    elif dbos_state == "PENDING":
        state = "running"
    elif dbos_state == "SUCCESS":
        output = status.output if isinstance(status.output, dict) else {}
        state = "waiting" if output.get("stop_reason") == "awaiting" else "done"
    elif dbos_state == "CANCELLED":
        state = "cancelled"
    else:
        state = "failed"
        error = _error_text(status)
    return ConversationTurn(
        id=status.workflow_id,
        kind="resumption" if status.name == RESUME_WORKFLOW_NAME else "turn",
        state=state,
        worker=status.executor_id if state != "queued" else None,
        app=mask_secrets(str(app), environment_secrets()) if app is not None else None,
        queued_at=_time(status.created_at),
        ended_at=_time(status.completed_at or status.updated_at) if state not in ("queued", "running") else None,
        error=error,
    )


def _error_text(status: WorkflowStatus) -> str:
    """The failed turn's error on one line, secrets masked: DBOS records the exception as it was raised, and an
    exception's message may hold what a log or page must never show (an API key a library echoed)."""
    if str(status.status) == "MAX_RECOVERY_ATTEMPTS_EXCEEDED":
        text = "DBOS gave up on it: its workers died too many times while running it"
    elif isinstance(status.error, BaseException):
        message = readable_message(status.error)
        text = f"{type_name(status.error)}: {message}" if message else type_name(status.error)
    else:  # an error of a class this process cannot import: DBOS gives its recorded form, not for people
        text = "its error was recorded in a form this process cannot read"
    line = " ".join(mask_secrets(text, environment_secrets()).split())
    return line if len(line) <= _MAX_ERROR else line[: _MAX_ERROR - 1] + "…"


def _time(epoch_ms: int | None) -> datetime | None:
    return datetime.fromtimestamp(epoch_ms / 1000, UTC) if epoch_ms else None
