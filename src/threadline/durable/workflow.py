"""The turn workflow ``threadline_turn`` and its two steps, registered with DBOS when this module is imported.

The log is the checkpoint (see "Running on many workers" in the README): DBOS records only that a step finished and
its small output (ids and a stop reason), while every message of the turn is in the store the moment it exists.

1. `record_request` records the user's message under an id made from the workflow id, so a step that ran but whose
   end DBOS did not record (the worker died in between) finds its message and does not add it twice;
2. `continue_turn` continues the conversation from its log (`Conversation.resume`, as a recovery:
   ``TurnOptions.recover``): model calls and tool results already logged are not redone; only the model call in
   flight when a worker died may run again. A tool call left without a result runs again if its tool is
   ``@tool(idempotent=True)``; any other waits for a person ("it may have run": the turn ends ``"awaiting"``,
   docs/architecture.md#tool-calls-that-wait).

The workflow ``threadline_resume`` is `continue_turn` alone: it goes on with a conversation after its waiting calls
were decided (`Client.approve`, ``deny``, ``submit_result``, ``resume``), queued like a turn, after that
conversation's earlier turns.

The workflow ``threadline_app`` only records, when a worker starts, the queue each of its apps is served on
(`offer_app`): a `Client` reads the newest record of an app to know where to queue its turns.

A worker installs its store and apps with `install` before launching DBOS.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import msgspec
from dbos import DBOS, SetWorkflowID

from .._ids import new_id
from ..conversation.conversation import Conversation
from ..engine.plan import mode_meta
from ..message_types import DEFAULT_META, Message, MessageMeta, UserMessage
from .apps import app_named
from .config import APP_RECORD_PREFIX, APP_WORKFLOW_NAME, RESUME_WORKFLOW_NAME, WORKFLOW_NAME

if TYPE_CHECKING:
    from ..builder import PromptBuilder
    from ..store import Store

__all__ = [
    "continue_turn",
    "install",
    "offer_app",
    "record_request",
    "request_id",
    "threadline_app",
    "threadline_resume",
    "threadline_turn",
]


@dataclass
class _Runtime:
    store: Store | None = None
    apps: dict[str, PromptBuilder] = field(default_factory=dict)


_RUNTIME = _Runtime()


def install(store: Store, apps: dict[str, PromptBuilder]) -> None:
    """Give this process's workflows their store and apps (a worker calls it once, before launching DBOS)."""
    _RUNTIME.store = store
    _RUNTIME.apps = dict(apps)


def _store() -> Store:
    store = _RUNTIME.store
    if store is None:
        raise RuntimeError("threadline.durable.workflow.install() was not called in this worker")
    return store


def request_id(workflow_id: str) -> str:
    """The id of the user message the turn ``workflow_id`` records."""
    return f"req-{workflow_id}"


@DBOS.workflow(name=WORKFLOW_NAME)
def threadline_turn(app: str, conversation_id: str, text: str) -> dict[str, str | None]:
    """One queued turn: record the request, then continue the conversation from its log.

    Returns ``{"stop_reason": ..., "last_message_id": ...}``.

    Raises:
        UnknownApp: if this worker has no app ``app`` (nothing is recorded then).
    """
    app_named(_RUNTIME.apps, app)
    workflow_id = DBOS.workflow_id
    assert workflow_id is not None
    record_request(app, conversation_id, text, request_id(workflow_id))
    return continue_turn(app, conversation_id)


@DBOS.workflow(name=RESUME_WORKFLOW_NAME)
def threadline_resume(app: str, conversation_id: str) -> dict[str, str | None]:
    """Go on with the conversation after its waiting calls were decided: run the approved calls, then the model, as
    a turn with no new request (one that still finds calls waiting ends ``"awaiting"`` at once).

    Returns ``{"stop_reason": ..., "last_message_id": ...}``, as `threadline_turn`.

    Raises:
        UnknownApp: if this worker has no app ``app`` (nothing runs then).
    """
    app_named(_RUNTIME.apps, app)
    return continue_turn(app, conversation_id)


@DBOS.workflow(name=APP_WORKFLOW_NAME)
def threadline_app(app: str, queue: str) -> dict[str, str]:
    """The record that ``app`` is served on ``queue`` (its output, which a `Client` reads)."""
    return {"app": app, "queue": queue}


def offer_app(app: str, queue: str, worker_id: str) -> None:
    """Record, once per worker start, that this worker serves ``app`` on ``queue`` (the newest record wins)."""
    with SetWorkflowID(f"{APP_RECORD_PREFIX}{app}:{worker_id}:{new_id()}"):
        threadline_app(app, queue)


@DBOS.step(name="record_request")
def record_request(app: str, conversation_id: str, text: str, message_id: str) -> str:
    """Record the user's message ``text`` (with id ``message_id``) in the conversation, creating it with the app's
    own messages (its ``agent(...)`` instructions) when it does not exist yet or is empty; returns the message id.
    Recording a message whose id is already in the log does nothing."""
    store = _store()
    builder = app_named(_RUNTIME.apps, app)
    conversation = Conversation(store=store, id=conversation_id)  # loads it, if the store has it
    conversation.apply_config_deltas(builder.delta_config)
    if any(message.id == message_id for message in conversation.messages):
        return message_id
    first: list[Message] = []
    if not len(conversation.messages):  # a new conversation (or one made empty, to be given its id)
        first = [msgspec.structs.replace(m, id=new_id(), created_at=datetime.now(UTC)) for m in builder.delta_messages]
    meta = mode_meta(conversation.config.mode) or DEFAULT_META
    request = UserMessage(id=message_id, content=text, meta=meta)
    conversation.add(*[_tagged(m, meta) for m in first], request)
    return message_id


def _tagged(message: Message, meta: MessageMeta) -> Message:
    """The app's message tagged with the conversation's mode unless it carries its own meta."""
    if message.meta is DEFAULT_META:
        return msgspec.structs.replace(message, meta=meta)
    return message


@DBOS.step(name="continue_turn")
def continue_turn(app: str, conversation_id: str) -> dict[str, str | None]:
    """Run the conversation's turn from its log with the app's model and tools; returns its stop reason and the id
    of the log's last message. A log that ends with a finished answer runs nothing."""
    store = _store()
    conversation = Conversation.load(conversation_id, store)
    conversation.apply_config_deltas(app_named(_RUNTIME.apps, app).delta_config)
    result = conversation.resume(recover=True)
    messages = conversation.messages
    return {"stop_reason": result.stop_reason, "last_message_id": messages[-1].id if len(messages) else None}
