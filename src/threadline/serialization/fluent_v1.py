"""The reader of version ``"1.0"`` of the fluent_llm format (docs/file-format.md#fluent_llm-10), converting losslessly.

``TextMessage`` (``role`` and ``text``) becomes a system, user or assistant message; ``AgentMessage`` a system
message; a ``ToolCallMessage`` (``tool_name``, ``tool_call_id``, ``arguments``, ``result`` or ``error``) becomes an
assistant tool call followed by its tool result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._json_values import json_problem
from ..errors import MessageListDeserializationError
from ..message_types import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage
from .fields import READ_ERRORS, FieldError, kind_name, positioned, required_field, result_text

__all__ = ["read_fluent_v1"]


def read_fluent_v1(items: Any) -> list[Message]:
    """The messages of a version-1.0 document's ``messages`` field.

    Raises:
        MessageListDeserializationError: naming the position and field.
    """
    if not isinstance(items, list):
        raise MessageListDeserializationError(
            f"field 'messages' must be a list, got {kind_name(items)}", field="messages"
        )
    out: list[Message] = []
    position = 0
    try:
        for position, item in enumerate(items):
            _read_item(item, position, out)
    except READ_ERRORS as exc:
        raise positioned(exc, position) from None
    return out


def _read_item(item: Any, position: int, out: list[Message]) -> None:
    if not isinstance(item, Mapping):
        raise MessageListDeserializationError(
            f"messages[{position}]: expected an object, got {kind_name(item)}", position=position
        )
    kind = required_field(item, "type", str, position)
    if kind == "TextMessage":
        text = required_field(item, "text", str, position)
        role = required_field(item, "role", str, position)
        if role == "user":
            out.append(UserMessage(content=text))
        elif role == "assistant":
            out.append(AssistantMessage(content=text))
        elif role == "system":
            out.append(SystemMessage(content=text))
        else:
            raise MessageListDeserializationError(
                f"messages[{position}].role: unknown role {role!r}", position=position, field="role"
            )
    elif kind == "AgentMessage":
        out.append(SystemMessage(content=required_field(item, "text", str, position)))
    elif kind == "ToolCallMessage":
        text = required_field(item, "message", str, position, optional=True)
        name = required_field(item, "tool_name", str, position)
        call_id = required_field(item, "tool_call_id", str, position)
        arguments = required_field(item, "arguments", dict, position, optional=True) or {}
        error = item.get("error")
        call = ToolCall(id=call_id, name=name, arguments=dict(arguments))
        problem = json_problem(call.arguments) if call.arguments else None
        if problem is not None:  # `object()` in a dict given to from_dict: to_json could not write it
            raise FieldError(f"arguments cannot be written as JSON ({problem})", "arguments")
        out.append(AssistantMessage(content=text or None, tool_calls=[call]))
        if error is not None:
            out.append(
                ToolMessage(tool_call_id=call_id, tool_name=name, content=result_text(error, "error"), is_error=True)
            )
        else:
            out.append(ToolMessage(tool_call_id=call_id, tool_name=name, content=result_text(item.get("result"))))
    else:
        raise MessageListDeserializationError(
            f"messages[{position}].type: unknown message type {kind!r} "
            "(version 1.0 has TextMessage, AgentMessage, ToolCallMessage)",
            position=position,
            field="type",
        )
