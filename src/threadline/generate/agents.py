"""`agent_tool`: a tool whose handler is a whole sub-conversation, with its own model, tools and log.

    researcher = llm.model("openai:gpt-4o-mini").agent("You research.").tools(search).store(store)
    result = await generate_text(model=..., prompt="…", tools=[agent_tool(researcher, "research", "Research a topic")])

The parent model calls it with one argument, ``task``. The sub-conversation runs to its answer through the same turn
engine, and the parent sees its final text. When the sub-conversation is stored (the builder's store, or ``store=``),
the parent's tool result is ``{"result": <text>, "conversation_id": <id>}``, so the child's log can be found from
the parent's. Sub-agents nest: a child's tools may hold agent tools of their own.

A child that did not finish normally is never passed off as a complete answer:

- its answer stopped at the output token limit (``"length"``) or by a content filter (``"content_filter"``): with
  text, the parent gets it with a note saying so (a ``note`` and ``stop_reason`` beside ``result`` when stored); with
  none, the tool result is an error saying why;
- its model call failed: the tool result is an error, naming the child's conversation when it is stored (its log
  holds the failure). A failure that may pass (a retryable `ModelError`: rate limit, server error…) or a child
  stopped by the tool's timeout also keeps the parent's ``generate_text`` result out of the cache;
- its turn ended with tool calls waiting (a tool of its own with ``approval=`` or ``external=True``:
  docs/architecture.md#tool-calls-that-wait): the tool result is an error saying the sub-agent has not answered and
  naming each waiting call (id, tool, what it waits for, why) and the child's conversation when it is stored. The
  parent's call itself does not wait: a person decides the child's calls on the child's conversation
  (`Conversation.load` it from the store, then ``approve``/``deny``/``submit_result`` and ``resume``), and the
  parent model may call the sub-agent again. A child that is not stored is gone once the tool returns, so its
  waiting calls can never be decided (the error says so: give the sub-agent a store). The parent's
  ``generate_text`` result is kept out of the cache (the wait passes).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..builder import PromptBuilder
from ..conversation import Conversation
from ..errors import ModelError, UserError
from ..message_list import AwaitingCall
from ..message_types import UserMessage
from ..tools import Tool, ToolArgumentsError, encode_result

if TYPE_CHECKING:
    from ..store.capabilities import ConversationStore

__all__ = ["SubAgentAwaiting", "agent_tool"]


class SubAgentAwaiting(Exception):
    """An `agent_tool`'s sub-conversation ended with tool calls waiting; its text (the parent's error result) names
    them and the sub-conversation. ``calls`` holds their ids, ``conversation_id`` the child's (None: not stored)."""

    def __init__(self, waiting: list[AwaitingCall], conversation_id: str | None) -> None:
        self.calls = [item.call.id for item in waiting]
        self.conversation_id = conversation_id
        listed = "; ".join(
            f"{item.call.id} ({item.tool}: {_waits_for(item.kind)}{': ' + item.reason if item.reason else ''})"
            for item in waiting
        )
        if conversation_id is not None:
            where = (
                f"A person decides them on the sub-agent's conversation {conversation_id} "
                "(Conversation.approve, deny or submit_result, then resume)."
            )
        else:
            where = (
                "The sub-agent's conversation is not stored, so they can never be decided: give the sub-agent a "
                "store to decide them later."
            )
        super().__init__(f"the sub-agent has not answered: its tool calls wait: {listed}. {where}")


def _waits_for(kind: str) -> str:
    return "waits for a result from outside" if kind == "external" else "waits for a person's decision"


TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {
            "type": "string",
            "description": "The complete task for the sub-agent, with everything it needs to know.",
        }
    },
    "required": ["task"],
    "additionalProperties": False,
}


def agent_tool(
    builder_or_callable: PromptBuilder | Callable[[str], Any],
    name: str,
    description: str,
    *,
    store: ConversationStore | None = None,
    timeout: float | None = 600.0,
) -> Tool:
    """A tool that hands a task to a sub-agent and answers with the sub-agent's result.

    Args:
        builder_or_callable: A `PromptBuilder` holding the sub-agent's model, instructions and tools (each call
            starts a new conversation from it with the task as the request); or a callable ``(task) -> …`` (sync or
            async) returning a `PromptBuilder` (run as above), a `GenerateTextResult` (its text and conversation),
            or any value (text is sent as is; a pydantic model, dataclass or dict as JSON).
        name: The tool's name.
        description: What the sub-agent does, for the parent model.
        store: Keep each sub-conversation in this store (a builder's own store is used otherwise).
        timeout: Seconds the sub-agent may take before the parent is told it was cut off.

    Raises:
        UserError: for something that is neither a builder nor a callable, or an empty name.
    """
    if not isinstance(builder_or_callable, PromptBuilder) and not callable(builder_or_callable):
        raise UserError(f"agent_tool needs a PromptBuilder or a callable, got {type(builder_or_callable).__name__}")
    if not isinstance(name, str) or not name:
        raise UserError("agent_tool needs a non-empty name")
    source = builder_or_callable

    async def handler(task: str) -> str:
        produced: Any = source
        if not isinstance(source, PromptBuilder):
            try:
                produced = source(task)
                if inspect.isawaitable(produced):
                    produced = await produced
            except BaseException as exc:
                _note_unfinished(exc)
                raise
            if not isinstance(produced, PromptBuilder):
                return _answer(produced)
            # A builder that already asks something (its own request, made from the task) runs as it is; one that
            # only sets the agent up (system text, model, tools) gets the task as its request.
            asks = any(isinstance(message, UserMessage) for message in produced.delta_messages)
            task_builder = produced if asks else produced.request(task)
        else:
            task_builder = source.request(task)
        if store is not None:
            task_builder = task_builder.store(store)
        return await _run(task_builder)

    return Tool.from_schema(
        handler, name=name, parameters=TASK_SCHEMA, description=description, validator=_task, timeout=timeout
    )


def _task(arguments: Mapping[str, Any]) -> dict[str, Any]:
    task = arguments.get("task")
    if not isinstance(task, str) or not task.strip():
        raise ToolArgumentsError("task: a non-empty string is required")
    extra = sorted(key for key in arguments if key != "task")
    if extra:
        raise ToolArgumentsError(f"unexpected arguments: {', '.join(extra)} (only 'task' is accepted)")
    return {"task": task}


async def _run(builder: PromptBuilder) -> str:
    """Run the sub-conversation to its answer; its id goes with the answer when it is stored."""
    conversation: Conversation = builder.prompt_conversation()
    try:
        async for _ in conversation:
            pass
    except BaseException as exc:
        _note_unfinished(exc)
        if isinstance(exc, ModelError) and conversation.store is not None:
            # The child's log, failure included, is in the store: the parent (and whoever reads its log) can
            # find it from the tool result.
            raise ModelError(
                f"{exc.message}; the sub-agent's log is conversation_id {conversation.id}",
                type=exc.type,
                status=exc.status,
                partial=exc.partial,
                retryable=exc.retryable,
            ) from exc
        raise
    stop_reason = conversation.last_turn.stop_reason if conversation.last_turn is not None else "end"
    stored = conversation.id if conversation.store is not None else None
    if stop_reason == "awaiting":
        _awaiting(conversation.awaiting, stored)
    return _result(conversation.text or "", stop_reason, stored)


def _awaiting(waiting: list[AwaitingCall], conversation_id: str | None) -> None:
    """Raise the parent's error result for a child whose calls wait (and keep the parent's result uncached)."""
    from . import note_transient_failure

    note_transient_failure()
    raise SubAgentAwaiting(waiting, conversation_id)


# How a child's answer may stop short (`TurnResult.stop_reason`), as told to the parent model.
_CUT_SHORT = {
    "length": "was cut off at the sub-agent's output token limit",
    "content_filter": "was stopped by the provider's content filter (or refused)",
    "budget": "was stopped by the sub-agent's spending limit (.budget) before it finished",
}


def _result(text: str, stop_reason: str, conversation_id: str | None) -> str:
    """The parent's tool result for a child's final answer, saying so when the answer stopped short.

    Raises:
        ModelError: when the answer stopped short with no text (the parent's tool result is then an error).
    """
    why = _CUT_SHORT.get(stop_reason)
    if why is None:
        if conversation_id is None:
            return text
        return json.dumps({"result": text, "conversation_id": conversation_id}, ensure_ascii=False)
    if not text.strip():
        where = f"; the sub-agent's log is conversation_id {conversation_id}" if conversation_id else ""
        raise ModelError(f"the sub-agent gave no answer: its answer {why}{where}", type=stop_reason)
    note = f"This answer {why}, so it may be incomplete."
    if conversation_id is None:
        return f"{text}\n\n[{note}]"
    return json.dumps(
        {"result": text, "conversation_id": conversation_id, "stop_reason": stop_reason, "note": note},
        ensure_ascii=False,
    )


def _note_unfinished(exc: BaseException) -> None:
    """Keep the running ``generate_text`` result out of the cache when the child's failure may pass: a retryable
    model error, or a cancellation (the tool's timeout; a cancelled parent caches nothing anyway)."""
    import asyncio

    if (isinstance(exc, ModelError) and exc.retryable) or isinstance(exc, asyncio.CancelledError):
        from . import note_transient_failure

        note_transient_failure()


def _answer(value: Any) -> str:
    """A callable's return value as the tool's result."""
    from .result import GenerateTextResult

    if isinstance(value, GenerateTextResult):
        if value.stop_reason == "awaiting":
            _awaiting(value.awaiting, value.conversation_id)
        return _result(value.text, value.stop_reason, value.conversation_id)
    if isinstance(value, Conversation):
        raise UserError("agent_tool's callable returned a Conversation; return a PromptBuilder to run it")
    return encode_result(value)
