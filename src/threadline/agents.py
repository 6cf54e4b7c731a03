"""`agent_tool`: a tool whose handler is a whole sub-conversation, with its own model, tools and log.

    researcher = llm.model("openai:gpt-4o-mini").agent("You research.").tools(search).store(store)
    result = await generate_text(model=..., prompt="…", tools=[agent_tool(researcher, "research", "Research a topic")])

The parent model calls it with one argument, ``task``. The sub-conversation runs to its answer through the same turn
engine, and the parent sees its final text. When the sub-conversation is stored (the builder's store, or ``store=``),
the parent's tool result is ``{"result": <text>, "conversation_id": <id>}``, so the child's log can be found from
the parent's. Sub-agents nest: a child's tools may hold agent tools of their own.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .builder import PromptBuilder
from .conversation import Conversation
from .errors import UserError
from .messages import UserMessage
from .tools import Tool, ToolArgumentsError, encode_result

if TYPE_CHECKING:
    from .store.base import Store

__all__ = ["agent_tool"]

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
    store: Store | None = None,
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
            produced = source(task)
            if inspect.isawaitable(produced):
                produced = await produced
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
    async for _ in conversation:
        pass
    text = conversation.text or ""
    if conversation.store is None:
        return text
    return json.dumps({"result": text, "conversation_id": conversation.id}, ensure_ascii=False)


def _answer(value: Any) -> str:
    """A callable's return value as the tool's result."""
    from .generate_result import GenerateTextResult

    if isinstance(value, GenerateTextResult):
        if value.conversation_id is None:
            return value.text
        return json.dumps({"result": value.text, "conversation_id": value.conversation_id}, ensure_ascii=False)
    if isinstance(value, Conversation):
        raise UserError("agent_tool's callable returned a Conversation; return a PromptBuilder to run it")
    return encode_result(value)
