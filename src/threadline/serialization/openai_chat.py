"""The reader of a bare list of OpenAI chat messages (``role``, ``content``, ``tool_calls``, ``tool_call_id``), and
the pieces of that form the JSON-file layout's messages share (they are a superset of it): image parts and tool
call arguments.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

from ..attachments import Attachment
from ..errors import MessageListDeserializationError
from ..message_types import AssistantMessage, Message, Reasoning, SystemMessage, ToolCall, ToolMessage, UserMessage
from .fields import READ_ERRORS, kind_name, positioned, required_field

__all__ = ["image_attachment", "read_openai_chat", "wire_tool_call"]


def read_openai_chat(items: list[Any]) -> list[Message]:
    """The messages of a list of OpenAI chat messages; a tool result whose call is not in the list is named by its
    ``name`` field, else ``"unknown"``.

    Raises:
        MessageListDeserializationError: naming the position and field.
    """
    out: list[Message] = []
    names: dict[str, str] = {}
    position = 0
    try:
        for position, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise MessageListDeserializationError(
                    f"messages[{position}]: expected an object, got {kind_name(item)}", position=position
                )
            role = required_field(item, "role", str, position)
            if role in ("system", "developer"):
                text, _ = _content(item, position)
                out.append(SystemMessage(content=text or ""))
            elif role == "user":
                text, attachments = _content(item, position)
                out.append(UserMessage(content=text or "", attachments=attachments))
            elif role == "assistant":
                text, _ = _content(item, position)
                calls = required_field(item, "tool_calls", list, position, optional=True) or []
                tool_calls = [_tool_call(call, position, index) for index, call in enumerate(calls)]
                for call in tool_calls:
                    names[call.id] = call.name
                # DeepSeek, vLLM, llama.cpp and Ollama put the model's thinking here (the name differs by server).
                thinking = required_field(item, "reasoning_content", str, position, optional=True)
                if thinking is None:
                    thinking = required_field(item, "reasoning", str, position, optional=True)
                reasoning = [Reasoning(text=thinking, provider="openai")] if thinking else []
                out.append(AssistantMessage(content=text, tool_calls=tool_calls, reasoning=reasoning))
            elif role == "tool":
                call_id = required_field(item, "tool_call_id", str, position)
                text, _ = _content(item, position)
                name = names.get(call_id) or item.get("name")
                if not isinstance(name, str):
                    name = "unknown"
                out.append(ToolMessage(tool_call_id=call_id, tool_name=name, content=text or ""))
            else:
                raise MessageListDeserializationError(
                    f"messages[{position}].role: unknown role {role!r}", position=position, field="role"
                )
    except READ_ERRORS as exc:
        raise positioned(exc, position) from None
    return out


def image_attachment(url: str) -> Attachment:
    """The image of an ``image_url`` content part: a ``data:`` URL is decoded, any other URL kept as it is.

    Raises:
        binascii.Error: if a data URL's payload is not valid base64 (what the ``Attachment`` constructor refuses is
            a ValueError of another kind).
    """
    if url.startswith("data:"):
        header, _, payload = url.partition(",")
        data = base64.b64decode(payload, validate=True)
        return Attachment("image", data=data, media_type=header[5:].split(";")[0] or None)
    return Attachment("image", url=url)


def wire_tool_call(call_id: str, name: str, raw: str | Mapping[str, Any] | None) -> ToolCall:
    """A tool call from its wire arguments: a JSON object's text, an object, or nothing.

    Text that is not a JSON object (or nests too deeply to keep as a value, see `threadline._text.MAX_NESTING`) is
    kept verbatim as ``raw_arguments``: the log shows what the model sent, and the loop answers it with an error
    result.
    """
    if raw is None or raw == "":
        return ToolCall(id=call_id, name=name)
    if isinstance(raw, Mapping):
        return ToolCall(id=call_id, name=name, arguments=dict(raw))
    try:
        arguments = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: arguments nested too deeply to parse
        arguments = None
    if isinstance(arguments, dict):
        try:
            return ToolCall(id=call_id, name=name, arguments=arguments)
        except ValueError:
            pass  # Nested too deeply to keep as a value: kept as text below.
    return ToolCall(id=call_id, name=name, raw_arguments=raw)


def _content(item: Mapping[str, Any], position: int) -> tuple[str | None, list[Attachment]]:
    content = item.get("content")
    if content is None or isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise MessageListDeserializationError(
            f"messages[{position}].content: expected string, list or null, got {kind_name(content)}",
            position=position,
            field="content",
        )
    texts: list[str] = []
    attachments: list[Attachment] = []
    for part_index, part in enumerate(content):
        where = f"messages[{position}].content[{part_index}]"
        if not isinstance(part, Mapping):
            raise MessageListDeserializationError(f"{where}: expected an object", position=position, field="content")
        part_type = part.get("type")
        if part_type == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif part_type == "image_url" and isinstance(part.get("image_url"), Mapping):
            url = part["image_url"].get("url")
            if not isinstance(url, str):
                raise MessageListDeserializationError(
                    f"{where}.image_url.url: expected string", position=position, field="content"
                )
            try:
                attachments.append(image_attachment(url))
            except binascii.Error:
                raise MessageListDeserializationError(
                    f"{where}.image_url.url: data URL is not valid base64", position=position, field="content"
                ) from None
        else:
            raise MessageListDeserializationError(
                f"{where}: unsupported content part {part_type!r}", position=position, field="content"
            )
    return "".join(texts), attachments


def _tool_call(call: Any, position: int, index: int) -> ToolCall:
    where = f"messages[{position}].tool_calls[{index}]"
    if not isinstance(call, Mapping):
        raise MessageListDeserializationError(f"{where}: expected an object", position=position, field="tool_calls")
    function = call.get("function")
    call_id = call.get("id")
    if not isinstance(call_id, str) or not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise MessageListDeserializationError(
            f"{where}: expected 'id' and 'function.name' strings", position=position, field="tool_calls"
        )
    raw = function.get("arguments")
    if raw is not None and not isinstance(raw, (str, Mapping)):
        raise MessageListDeserializationError(
            f"{where}.function.arguments: expected a JSON string, got {kind_name(raw)}",
            position=position,
            field="tool_calls",
        )
    return wire_tool_call(call_id, function["name"], raw)
