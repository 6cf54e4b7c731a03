"""Helpers shared by the core tests: comparing logs without ids and timestamps, scripted tool calls."""

from __future__ import annotations

import itertools
from typing import Any

from threadline import AssistantMessage, Message, MessageList, ToolCall, ToolMessage, UserMessage

_counter = itertools.count()


def call(
    name: str, arguments: dict[str, Any] | None = None, *, id: str | None = None, raw: str | None = None
) -> ToolCall:
    """A tool call with a fresh id unless one is given."""
    return ToolCall(id=id or f"call_{next(_counter)}", name=name, arguments=arguments or {}, raw_arguments=raw)


def calls(*items: ToolCall, content: str | None = None) -> AssistantMessage:
    """An assistant message asking for tool calls (what a scripted model plays back)."""
    return AssistantMessage(content=content, tool_calls=list(items))


def shape(message: Message) -> tuple[Any, ...]:
    """What a person sees of a message: role, content, tool calls, results, errors (not ids or timestamps)."""
    if isinstance(message, AssistantMessage):
        return (
            "assistant",
            message.content,
            tuple((c.id, c.name, tuple(sorted(c.arguments.items())), c.raw_arguments) for c in message.tool_calls),
            None if message.error is None else (message.error.type, message.error.message, message.error.retryable),
        )
    if isinstance(message, ToolMessage):
        return ("tool", message.tool_call_id, message.tool_name, message.content, message.is_error)
    if isinstance(message, UserMessage):
        return ("user", message.content, tuple(a.to_dict()["kind"] for a in message.attachments))
    return (type(message).__name__, message.content)


def shapes(messages: MessageList | list[Message]) -> list[tuple[Any, ...]]:
    return [shape(message) for message in messages]


def roles(messages: MessageList | list[Message]) -> list[str]:
    return [type(message).__name__ for message in messages]
