"""One message in the JSON-file layout (docs/file-format.md#the-json-file-layout): a superset of an OpenAI
chat message (``id``, ``role``, ``createdAt``, ``content``, ``tool_calls``, ``tool_call_id``, ``toolName``,
``duration``, ``mode``, UI fields, ...). The files and folders of that layout are `threadline.store.jsonfiles`.

Old files whose messages have no tool fields (only ``role`` and ``content``) read as they are, and so does a bare list
of OpenAI chat messages, its thinking (``reasoning_content`` or ``reasoning`` as text) included. Failures are assistant
messages whose content ends in an ``[LLM_ERROR type=… message=…]`` block; `message_to_file` also writes the error as an
``error`` object, and `message_from_file` reads either. Every field threadline keeps is written, so a message written
and read back is the same message.
"""

from __future__ import annotations

import binascii
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import msgspec

from .._ids import new_id
from ..attachments import Attachment
from ..errors import MessageListDeserializationError
from ..message_fields import problem_field, value_problem
from ..message_types import (
    APPROVAL_KINDS,
    APPROVAL_SCOPES,
    APPROVAL_STATES,
    MODES,
    ApprovalMessage,
    AssistantMessage,
    LLMError,
    Message,
    MessageMeta,
    Reasoning,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    content_for_model,
)
from ..pricing.cost import Cost
from .fields import (
    READ_ERRORS,
    FieldError,
    first_field,
    is_of,
    iso_timestamp,
    kind_name,
    parse_timestamp,
    positioned,
    result_text,
)
from .native import load_data
from .openai_chat import image_attachment, wire_tool_call

__all__ = ["message_from_file", "message_to_file", "messages_from_file_data"]

_ERROR_BLOCK = re.compile(r"\n?\[LLM_ERROR type=(?P<type>\S*) message=(?P<message>.*)\]\Z", re.S)
# UI fields of the old format and where threadline keeps them (``meta.ui``).
_UI_FIELDS = {"partType": "part_type", "isCollapsed": "collapsed", "widget": "widget", "workflowId": "workflow_id"}


def _meta(item: Mapping[str, Any]) -> MessageMeta | None:
    mode = first_field(item, ("mode",), str, "a string")
    if mode is not None and mode not in MODES:
        raise FieldError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}", "mode")
    ui: dict[str, Any] = {}
    extra_ui = first_field(item, ("ui",), dict, "an object")
    if extra_ui:
        ui.update(extra_ui)
    for old, new in _UI_FIELDS.items():
        if item.get(old) is not None:
            ui[new] = item[old]
    include = item.get("includeInContext")
    include = True if include is None else include
    if not isinstance(include, bool):
        raise FieldError(f"includeInContext: expected a boolean, got {kind_name(include)}", "includeInContext")
    fields = {
        "mode": mode,
        "run_id": first_field(item, ("runId", "run_id"), str, "a string"),
        "node_id": first_field(item, ("nodeId", "node_id"), str, "a string"),
        "agent_id": first_field(item, ("agentId", "agent_id"), str, "a string"),
    }
    if not any(fields.values()) and include and not ui:
        return None
    return MessageMeta(
        mode=mode,
        run_id=fields["run_id"],
        node_id=fields["node_id"],
        agent_id=fields["agent_id"],
        include_in_context=include,
        ui=ui,
    )


def _content(item: Mapping[str, Any]) -> tuple[str | None, list[Attachment]]:
    content = item.get("content")
    if content is None or isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise FieldError(f"content: expected a string, a list of parts or null, got {kind_name(content)}", "content")
    texts: list[str] = []
    images: list[Attachment] = []
    for index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "image_url" and isinstance(part.get("image_url"), Mapping):
            url = part["image_url"].get("url")
            if not isinstance(url, str):
                raise FieldError(f"content[{index}].image_url.url: expected a string", "content")
            try:
                images.append(image_attachment(url))
            except binascii.Error:
                raise FieldError(f"content[{index}]: the data URL is not valid base64", "content") from None
        else:
            raise FieldError(f"content[{index}]: unsupported content part {kind!r}", "content")
    return "".join(texts), images


def _tool_call(call: Any, index: int) -> ToolCall:
    where = f"tool_calls[{index}]"
    if not isinstance(call, Mapping) or not isinstance(call.get("id"), str):
        raise FieldError(f"{where}: expected an object with an 'id' string", "tool_calls")
    function = call.get("function")
    if isinstance(function, Mapping):
        name, raw = function.get("name"), function.get("arguments")
    else:
        name, raw = call.get("name"), call.get("arguments")
    if not isinstance(name, str) or not name:
        raise FieldError(f"{where}: missing the tool name", "tool_calls")
    if raw is not None and not isinstance(raw, (str, Mapping)):
        raise FieldError(f"{where}.arguments: expected a JSON string or an object, got {kind_name(raw)}", "tool_calls")
    return wire_tool_call(call["id"], name, raw)


def _error(item: Mapping[str, Any], content: str | None) -> tuple[LLMError | None, str | None]:
    data = item.get("error")
    if data is not None:
        if not isinstance(data, Mapping) or not isinstance(data.get("type"), str):
            raise FieldError("error: expected an object with 'type' and 'message'", "error")
        message, retryable = data.get("message", ""), data.get("retryable", False)
        if not isinstance(message, str) or not isinstance(retryable, bool):
            raise FieldError("error: 'message' must be a string and 'retryable' a boolean", "error")
        error = LLMError(type=data["type"], message=message, retryable=retryable)
        if content is not None:
            match = _ERROR_BLOCK.search(content)
            if match and match.group("type") == error.type and match.group("message") == error.message:
                content = content[: match.start()]
        return error, content
    if content is not None:
        match = _ERROR_BLOCK.search(content)
        if match:
            return LLMError(type=match.group("type"), message=match.group("message")), content[: match.start()]
    return None, content


def _usage(item: Mapping[str, Any]) -> Usage | None:
    data = item.get("usage")
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise FieldError(f"usage: expected an object, got {kind_name(data)}", "usage")
    inputs = data.get("input_tokens", data.get("prompt_tokens", 0))
    outputs = data.get("output_tokens", data.get("completion_tokens", 0))
    reasoning = data.get("reasoning_tokens", 0)
    read = data.get("cache_read_tokens", 0)
    written = data.get("cache_write_tokens", 0)
    counts = (inputs, outputs, reasoning, read, written)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts):
        raise FieldError("usage: token counts must be non-negative integers", "usage")
    cost = data.get("cost")
    if cost is not None:
        try:
            cost = msgspec.convert(cost, Cost)
        except msgspec.ValidationError as exc:
            raise FieldError(f"usage.cost: {exc}", "usage") from None
    return Usage(
        input_tokens=inputs,
        output_tokens=outputs,
        reasoning_tokens=reasoning,
        cache_read_tokens=read,
        cache_write_tokens=written,
        cost=cost,
    )


_REASONING_TEXT = ("text", "signature", "redacted", "provider", "id")


def _reasoning(item: Mapping[str, Any]) -> list[Reasoning]:
    """An assistant message's ``reasoning``: threadline's list of objects with the fields of `Reasoning`, or, as in
    an OpenAI-compatible server's answer, the thinking as text in ``reasoning_content`` (DeepSeek, vLLM, llama.cpp)
    or ``reasoning`` (Ollama, vLLM, OpenRouter), read as `MessageList.from_dict` reads a bare OpenAI list."""
    data = item.get("reasoning")
    if isinstance(data, list):
        return _reasoning_list(data)
    thinking = first_field(item, ("reasoning_content",), str, "a string")
    if thinking is None and data is not None:
        if not isinstance(data, str):
            raise FieldError(f"reasoning: expected a list or a string, got {kind_name(data)}", "reasoning")
        thinking = data
    return [Reasoning(text=thinking, provider="openai")] if thinking else []


def _reasoning_list(data: list[Any]) -> list[Reasoning]:
    pieces: list[Reasoning] = []
    for index, piece in enumerate(data):
        where = f"reasoning[{index}]"
        if not isinstance(piece, Mapping):
            raise FieldError(f"{where}: expected an object, got {kind_name(piece)}", "reasoning")
        values: dict[str, Any] = {}
        for key in _REASONING_TEXT:
            value = piece.get(key)
            if value is not None and not isinstance(value, str):
                raise FieldError(f"{where}.{key}: expected a string, got {kind_name(value)}", "reasoning")
            if value is not None:
                values[key] = value
        position = piece.get("position")
        if position is not None and not (is_of(position, int) and position >= 0):
            raise FieldError(f"{where}.position: expected a non-negative integer, got {position!r}", "reasoning")
        pieces.append(Reasoning(position=position, **values))
    return pieces


def message_from_file(item: Any, names: Mapping[str, str] | None = None) -> Message:
    """One message of a ``messages.json`` file.

    Args:
        item: The decoded JSON object.
        names: Tool names by call id, from earlier assistant messages (old files may not name the tool in results).

    Raises:
        MessageListDeserializationError: naming the field.
    """
    try:
        return _checked(_message(item, names or {}))
    except FieldError as exc:
        raise MessageListDeserializationError(str(exc), field=exc.field) from None
    except ValueError as exc:  # what a message constructor refuses (a value nested too deeply)
        raise MessageListDeserializationError(str(exc)) from None


def _message(item: Any, names: Mapping[str, str]) -> Message:
    if not isinstance(item, Mapping):
        raise FieldError(f"expected an object, got {kind_name(item)}")
    role = first_field(item, ("role",), str, "a string")
    if role is None:
        raise FieldError("missing field 'role'", "role")
    message_id = first_field(item, ("id",), str, "a string") or new_id()
    created = parse_timestamp(item.get("createdAt", item.get("created_at")), "createdAt") or datetime.now(UTC)
    meta = _meta(item)
    common: dict[str, Any] = {"id": message_id, "created_at": created}
    if meta is not None:
        common["meta"] = meta
    content, images = _content(item)
    if role in ("system", "developer"):
        return SystemMessage(content=content or "", **common)
    if role == "user":
        attachments = list(images)
        raw = first_field(item, ("attachments",), list, "a list") or []
        for index, data in enumerate(raw):
            try:
                attachments.append(Attachment.from_dict(data))
            except (TypeError, ValueError) as exc:
                raise FieldError(f"attachments[{index}]: {exc}", "attachments") from None
        return UserMessage(content=content or "", attachments=attachments, **common)
    if role == "assistant":
        calls = [_tool_call(call, i) for i, call in enumerate(first_field(item, ("tool_calls",), list, "a list") or [])]
        error, content = _error(item, content)
        return AssistantMessage(
            content=content,
            tool_calls=calls,
            error=error,
            model=first_field(item, ("model",), str, "a string"),
            usage=_usage(item),
            reasoning=_reasoning(item),
            **common,
        )
    if role == "tool":
        call_id = first_field(item, ("tool_call_id", "toolCallId"), str, "a string")
        if call_id is None:
            raise FieldError("missing field 'tool_call_id'", "tool_call_id")
        # The layout's own field first; an OpenAI message's ``name`` only when no earlier call names the tool (as
        # `MessageList.from_dict` reads a bare OpenAI list).
        name = (
            first_field(item, ("toolName", "tool_name"), str, "a string")
            or names.get(call_id)
            or first_field(item, ("name",), str, "a string")
            or "unknown"
        )
        is_error = first_field(item, ("isError", "is_error"), bool, "a boolean") or False
        duration = first_field(item, ("duration", "duration_ms"), (int, float), "a number")
        text = content if content is not None else result_text(item.get("result", ""))
        return ToolMessage(
            tool_call_id=call_id,
            tool_name=name,
            content=text,
            is_error=is_error,
            duration_ms=_milliseconds(duration),
            **common,
        )
    if role == "approval":
        return _approval(item, common)
    raise FieldError(f"role: unknown role {role!r} (expected system, user, assistant, tool or approval)", "role")


_APPROVAL_TEXT = ("tool_call_id", "tool_name", "arguments_sha256", "reason", "by")
_APPROVAL_CHOICES = (("state", APPROVAL_STATES), ("kind", APPROVAL_KINDS), ("scope", APPROVAL_SCOPES))


def _approval(item: Mapping[str, Any], common: dict[str, Any]) -> ApprovalMessage:
    """An approval entry, written with the field names of the native form (docs/file-format.md#approvals)."""
    values: dict[str, Any] = {}
    for key in _APPROVAL_TEXT:
        value = first_field(item, (key,), str, "a string")
        if value is not None:
            values[key] = value
    for key, allowed in _APPROVAL_CHOICES:
        value = first_field(item, (key,), str, "a string")
        if value is not None:
            if value not in allowed:
                raise FieldError(f"{key}: expected one of {', '.join(allowed)}, got {value!r}", key)
            values[key] = value
    for key in ("tool_call_id", "tool_name", "arguments_sha256", "state"):
        if key not in values:
            raise FieldError(f"missing field {key!r}", key)
    arguments = first_field(item, ("arguments",), dict, "an object")
    if arguments is not None:
        values["arguments"] = arguments
    return ApprovalMessage(**values, **common)


def _milliseconds(duration: float | None) -> float | None:
    """A tool result's ``duration`` as a float (JSON allows a whole number of any length, a float does not)."""
    if duration is None:
        return None
    try:
        return float(duration)
    except OverflowError:
        raise FieldError("duration: too large a number of milliseconds", "duration") from None


def _checked(message: Message) -> Message:
    """A message just read, if its values are ones the log keeps exactly (see `value_problem`).

    Raises:
        FieldError: naming the field (``duration``: nan, an object in the arguments or the UI fields).
    """
    problem = value_problem(message)
    if problem is not None:
        raise FieldError(problem, problem_field(problem))
    return message


def message_to_file(message: Message) -> dict[str, Any]:
    """One message in the file layout's form (a superset of an OpenAI chat message); inverse of
    `message_from_file`."""
    out: dict[str, Any] = {"id": message.id, "role": message.__struct_config__.tag}
    out["createdAt"] = iso_timestamp(message.created_at)
    if isinstance(message, AssistantMessage):
        out["content"] = content_for_model(message) if (message.content or message.error) else message.content
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.raw_arguments
                        if call.raw_arguments is not None
                        else json.dumps(call.arguments, ensure_ascii=False),
                    },
                }
                for call in message.tool_calls
            ]
        if message.error is not None:
            error = message.error
            out["error"] = {"type": error.type, "message": error.message, "retryable": error.retryable}
        if message.model is not None:
            out["model"] = message.model
        if message.usage is not None:
            usage = message.usage
            out["usage"] = {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                **msgspec.to_builtins(usage),  # the other counts where they are not 0, and the cost
            }
        if message.reasoning:
            out["reasoning"] = [msgspec.to_builtins(piece) for piece in message.reasoning]
    elif isinstance(message, ToolMessage):
        out["content"] = message.content
        out["tool_call_id"] = message.tool_call_id
        out["toolName"] = message.tool_name
        if message.is_error:
            out["isError"] = True
        if message.duration_ms is not None:
            out["duration"] = message.duration_ms
    elif isinstance(message, ApprovalMessage):
        entry = msgspec.to_builtins(message)
        for key in ("role", "id", "created_at", "meta"):
            entry.pop(key, None)
        out.update(entry)
    else:
        out["content"] = message.content
        if isinstance(message, UserMessage) and message.attachments:
            out["attachments"] = [attachment.to_dict() for attachment in message.attachments]
    meta = message.meta
    for key, value in (
        ("mode", meta.mode),
        ("runId", meta.run_id),
        ("nodeId", meta.node_id),
        ("agentId", meta.agent_id),
    ):
        if value is not None:
            out[key] = value
    if not meta.include_in_context:
        out["includeInContext"] = False
    ui = dict(meta.ui)
    for old, new in _UI_FIELDS.items():
        if new in ui:
            out[old] = ui.pop(new)
    if ui:
        out["ui"] = ui
    return out


def messages_from_file_data(data: Any) -> list[Message]:
    """The messages of a decoded ``messages.json``: a list of layout messages (bare or under ``messages``), or any
    versioned document `MessageList.from_dict` reads.

    Raises:
        MessageListDeserializationError: naming the position and field.
    """
    if isinstance(data, Mapping):
        if "version" in data:
            return load_data(data)
        data = data.get("messages")
        if not isinstance(data, list):
            raise MessageListDeserializationError("expected a list of messages or an object with 'messages'")
    if not isinstance(data, list):
        raise MessageListDeserializationError(f"expected a list of messages, got {kind_name(data)}")
    out: list[Message] = []
    names: dict[str, str] = {}
    position = 0
    try:
        for position, item in enumerate(data):  # noqa: B007 - the except below names the message by it
            message = _checked(_message(item, names))
            if isinstance(message, AssistantMessage):
                names.update((call.id, call.name) for call in message.tool_calls)
            out.append(message)
    except READ_ERRORS as exc:
        raise positioned(exc, position) from None
    return out
