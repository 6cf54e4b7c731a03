"""`Client`: queue turns for workers (``threadline worker``) and wait for how they ended.

A process that only submits turns needs no worker code: it writes the queued turn into DBOS's system database with
`dbos.DBOSClient`; any worker with the turn's app runs it. The store is read for the answer's text.

Tool calls that wait for a person (docs/architecture.md#tool-calls-that-wait) are decided here too: `Client.approve`,
``deny`` and ``submit_result`` record the decision in the store, through the library, then queue the turn's
resumption; `Client.resume` queues it after a decision made elsewhere (the CLI, the viewer, the library).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._ids import new_id
from ..conversation.conversation import Conversation
from ..errors import UserError
from ..message_list import call_waits
from ..message_types import ApprovalMessage, AssistantMessage, ToolMessage
from ..store import open_store
from .config import (
    APP_NAME,
    APP_RECORD_PREFIX,
    APP_WORKFLOW_NAME,
    RESUME_WORKFLOW_NAME,
    WORKFLOW_NAME,
    system_database,
)

if TYPE_CHECKING:
    from dbos import DBOSClient

    from ..store import Store

__all__ = ["Client", "TurnHandle", "TurnOutcome"]

_FINISHED = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")


@dataclass(frozen=True)
class TurnOutcome:
    """How a queued turn ended: its stop reason and the text of its last answer (None if it ended on no answer)."""

    stop_reason: str
    text: str | None


def _decided_not_acted_on(conversation: Conversation, call_id: str, state: str) -> bool:
    """Whether ``call_id`` was ``state`` (``"approved"`` or ``"denied"``) already and the turn has not gone on since
    (a decision whose resumption was never queued)."""
    waits = call_waits(conversation.messages)
    decided = waits.approved if state == "approved" else waits.denied
    if any(call.id == call_id for call, _ in decided):
        return True
    # A denial whose error result was written with it, as the last message.
    return state == "denied" and _answered_not_acted_on(conversation, call_id) and _denied(conversation, call_id)


def _denied(conversation: Conversation, call_id: str) -> bool:
    return any(
        isinstance(message, ApprovalMessage) and message.tool_call_id == call_id and message.state == "denied"
        for message in reversed(conversation.messages)
    )


def _answered_not_acted_on(conversation: Conversation, call_id: str) -> bool:
    """Whether the result of ``call_id`` is the log's last message (given, and the turn has not gone on since)."""
    messages = conversation.messages
    last = messages[-1] if len(messages) else None
    return isinstance(last, ToolMessage) and last.tool_call_id == call_id


class TurnHandle:
    """A queued turn: its workflow ``id`` and ``conversation_id`` at once, and its outcome when it has one."""

    def __init__(self, client: Client, workflow_id: str, conversation_id: str) -> None:
        self._client = client
        self.id = workflow_id
        self.conversation_id = conversation_id

    def status(self) -> str:
        """DBOS's status of the turn: ``ENQUEUED``, ``PENDING`` (running), ``SUCCESS``, ``ERROR``…"""
        return str(self._client.dbos.retrieve_workflow(self.id).get_status().status)

    def result(self, timeout: float | None = None) -> TurnOutcome:
        """Wait for the turn to end and return its outcome.

        Raises:
            TimeoutError: if it has not ended within ``timeout`` seconds (it goes on).
            UnknownApp: if the worker that took it has no such app.
            Exception: whatever ended the turn with an error (e.g. `ModelError`), as DBOS recorded it.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        handle: Any = self._client.dbos.retrieve_workflow(self.id)
        while handle.get_status().status not in _FINISHED:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"turn {self.id} has not ended after {timeout} seconds")
            time.sleep(0.1)
        output: dict[str, Any] = handle.get_result()
        return TurnOutcome(output["stop_reason"], self._client.answer_text(self.conversation_id, output))

    def __repr__(self) -> str:
        return f"<TurnHandle {self.id} on {self.conversation_id}>"


class Client:
    """Queue turns on the store at ``store_url`` for workers (``threadline worker --store URL``).

    Args:
        store_url: The store the workers use (SQLite or PostgreSQL).
        dbos_url: DBOS's system database, when the workers were given ``--dbos URL`` (see `threadline.durable.config`).

    Turns of an app are queued on the queue of its model's provider, which the workers serving it recorded when
    they started: an app no worker has offered yet on this store cannot be submitted (`UserError`).
    """

    def __init__(self, store_url: str, *, dbos_url: str | None = None) -> None:
        from dbos import DBOS, DBOSClient

        self.store: Store = open_store(store_url)
        database = system_database(self.store, store_url, dbos_url)
        DBOS.migrate(database.url, schema=database.schema)  # DBOS's tables, if no worker made them yet
        self.dbos: DBOSClient = DBOSClient(
            system_database_url=database.url, dbos_system_schema=database.schema, application_name=APP_NAME
        )

    def submit(self, text: str, *, app: str, conversation_id: str | None = None, key: str | None = None) -> TurnHandle:
        """Queue a turn: the user's ``text`` in conversation ``conversation_id`` (a new one by default), answered
        with the app named ``app``. One turn at a time runs per conversation, in the order queued.

        ``key`` is the turn's workflow id: submitting the same key again queues nothing and returns the same turn
        (and conversation).
        """
        if not isinstance(text, str) or not text:
            raise UserError("a turn needs a non-empty text")
        return self._enqueue(WORKFLOW_NAME, key, app, conversation_id or new_id(), text)

    def resume(self, conversation_id: str, *, app: str, key: str | None = None) -> TurnHandle:
        """Queue the going-on of conversation ``conversation_id`` after its waiting calls were decided elsewhere
        (the CLI, the viewer, `Conversation.approve`…): the approved calls run, then the model answers, with the
        app named ``app``, after the conversation's earlier queued turns. Nothing new is asked.

        It is queued even while calls still wait (a turn queued before may not have ended): the resumed turn then
        ends ``"awaiting"`` at once; one on a log that ends with a finished answer asks the model nothing. ``key``
        is the workflow id, as for `submit`.
        """
        return self._enqueue(RESUME_WORKFLOW_NAME, key, app, conversation_id)

    def approve(
        self,
        conversation_id: str,
        call_id: str,
        *,
        app: str,
        by: str | None = None,
        reason: str | None = None,
        arguments: dict[str, Any] | None = None,
        scope: str = "call",
        arguments_sha256: str | None = None,
        key: str | None = None,
    ) -> TurnHandle | None:
        """Approve the waiting call ``call_id`` (`Conversation.approve`, recorded in the store now), then, once no
        call of the conversation waits any more, queue its resumption with the app named ``app`` (`resume`).
        ``key`` is the resumption's workflow id: a decision retried with a key already queued decides nothing again
        and returns that resumption. A call approved already and not yet run (a retry after this process died
        between recording and queuing, or a decision made elsewhere) is not approved again: the resumption is
        queued.

        Returns:
            The resumed turn's handle; None while other calls still wait (nothing is queued: decide them, and the
            last decision queues the resumption).

        Raises:
            UserError: for edited ``arguments``: they are checked against the tool's schema, which this process
                does not load; approve them with the library or ``threadline approve --arguments JSON -T ...``
                where the tools are loaded, then call `resume`. Nothing is recorded or queued.
            AwaitingDecision, UserError: as `Conversation.approve`; nothing is recorded or queued.
        """
        if arguments is not None:
            raise UserError(
                "the durable Client cannot approve a call with edited arguments: they are checked against the "
                "tool's schema, and the Client does not load the app's tools; approve with the library "
                "(Conversation.approve) or the CLI (threadline approve --arguments JSON -T module:tool), where the "
                "tools are loaded, then queue the rest with Client.resume"
            )
        return self._decide(
            conversation_id,
            app,
            key,
            lambda conversation: _decided_not_acted_on(conversation, call_id, "approved"),
            lambda conversation: conversation.approve(
                call_id, by=by, reason=reason, scope=scope, arguments_sha256=arguments_sha256
            ),
        )

    def deny(
        self,
        conversation_id: str,
        call_id: str,
        *,
        app: str,
        by: str | None = None,
        reason: str | None = None,
        arguments_sha256: str | None = None,
        key: str | None = None,
    ) -> TurnHandle | None:
        """Deny the waiting call ``call_id`` (`Conversation.deny`: the model reads ``"denied by <by>: <reason>"``),
        then queue the resumption as `approve` does (a call denied already and not yet answered is not denied
        again); None while other calls still wait.

        Raises:
            AwaitingDecision, UserError: as `Conversation.deny`; nothing is recorded or queued.
        """
        return self._decide(
            conversation_id,
            app,
            key,
            lambda conversation: _decided_not_acted_on(conversation, call_id, "denied"),
            lambda conversation: conversation.deny(call_id, by=by, reason=reason, arguments_sha256=arguments_sha256),
        )

    def submit_result(
        self,
        conversation_id: str,
        call_id: str,
        content: Any,
        *,
        app: str,
        is_error: bool = False,
        key: str | None = None,
    ) -> TurnHandle | None:
        """Give the result of the external call ``call_id`` (`Conversation.submit_result`), then queue the
        resumption as `approve` does (a call whose result is the log's last message, no answer after it, is not
        given one again); None while other calls still wait.

        Raises:
            AwaitingDecision, UserError: as `Conversation.submit_result`; nothing is recorded or queued.
        """
        return self._decide(
            conversation_id,
            app,
            key,
            lambda conversation: _answered_not_acted_on(conversation, call_id),
            lambda conversation: conversation.submit_result(call_id, content, is_error=is_error),
        )

    def _decide(
        self,
        conversation_id: str,
        app: str,
        key: str | None,
        made_already: Callable[[Conversation], bool],
        record: Callable[[Conversation], object],
    ) -> TurnHandle | None:
        """Record a decision (``record``) unless a retry finds it ``made_already`` and not yet acted on, then queue
        the resumption once no call waits; a ``key`` already queued returns that resumption and records nothing."""
        existing = self._existing(key)
        if existing is not None:
            return existing
        conversation = Conversation.load(conversation_id, self.store)
        if not made_already(conversation):
            record(conversation)
        return self._resume_when_decided(conversation, app, key)

    def _existing(self, key: str | None) -> TurnHandle | None:
        """The workflow queued under ``key`` already, if any: a decision retried with its key decides nothing
        again and returns the resumption it queued."""
        if key is None:
            return None
        found = self.dbos.list_workflows(workflow_ids=[key], load_input=True, load_output=False)
        if not found or found[0].input is None:
            return None
        return TurnHandle(self, key, str(found[0].input["args"][1]))

    def _resume_when_decided(self, conversation: Conversation, app: str, key: str | None) -> TurnHandle | None:
        """Queue the conversation's resumption, unless calls still wait (the decision just made is in memory)."""
        if conversation.awaiting:
            return None
        return self._enqueue(RESUME_WORKFLOW_NAME, key, app, conversation.id)

    def _enqueue(self, workflow_name: str, key: str | None, app: str, conversation_id: str, *args: str) -> TurnHandle:
        """Queue ``workflow_name(app, conversation_id, *args)`` under the workflow id ``key`` (a new one by default),
        on the conversation's partition of the queue: after its earlier turns, one at a time."""
        workflow_id = key or new_id()
        options: dict[str, Any] = {
            "workflow_name": workflow_name,
            "queue_name": self.queue_of(app),
            "workflow_id": workflow_id,
            "queue_partition_key": conversation_id,
            # So the viewer and ``--status`` find a conversation's turns (`threadline.durable.status`).
            "attributes": {"conversation_id": conversation_id, "app": app},
        }
        # An id already used attaches to that turn ("return-existing", DBOS's default reuse policy).
        self.dbos.enqueue(options, app, conversation_id, *args)  # type: ignore[arg-type]
        return TurnHandle(self, workflow_id, self._inputs_of(workflow_id))

    def queue_of(self, app: str) -> str:
        """The queue the turns of ``app`` go on: the one the newest worker serving it recorded at its start.

        Raises:
            UserError: if no worker has offered ``app`` on this store yet.
        """
        found = self.dbos.list_workflows(
            name=APP_WORKFLOW_NAME,
            workflow_id_prefix=f"{APP_RECORD_PREFIX}{app}:",
            status="SUCCESS",
            sort_desc=True,
            limit=1,
            load_input=False,
            load_output=True,
        )
        if not found or not isinstance(found[0].output, dict):
            raise UserError(
                f"no worker has offered app {app!r} on this store yet: start one with "
                f"threadline worker --store URL --app module:{app} (it records where the app's turns are queued)"
            )
        return str(found[0].output["queue"])

    def _inputs_of(self, workflow_id: str) -> str:
        """The conversation id the queued turn ``workflow_id`` was given (the first enqueue wins a key)."""
        status = self.dbos.list_workflows(workflow_ids=[workflow_id], load_input=True, load_output=False)[0]
        assert status.input is not None
        return str(status.input["args"][1])

    def answer_text(self, conversation_id: str, output: dict[str, Any]) -> str | None:
        """The text of the message a finished turn's output names, read from the store."""
        last = output.get("last_message_id")
        if last is None:
            return None
        # Where it usually is: among the newest messages (a later turn may have added a few); the whole log only if
        # it is not there.
        for messages in (self.store.read_tail(conversation_id, 64).messages, self.store.load(conversation_id)):
            for message in reversed(messages):
                if message.id == last:
                    return message.content if isinstance(message, AssistantMessage) else None
        return None

    def close(self) -> None:
        """Close the store and DBOS's connections."""
        self.dbos.destroy()
        self.store.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
