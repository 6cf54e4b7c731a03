"""Import and export of the JSON-file layout of the notes the project grew from (``seeds/001``)::

    <dir>/conversations/index.json            [{"id", "title", "createdAt", "updatedAt", "activeType", ...}, ...]
    <dir>/conversations/<id>/messages.json    [{"id", "role", "createdAt", "content", "tool_calls",
                                                "tool_call_id", "toolName", "duration", "mode", ...}, ...]

Messages there are a superset of OpenAI chat messages. Old files whose messages have no tool fields (only ``role``
and ``content``) import as they are. Failures are assistant messages whose content ends in an
``[LLM_ERROR type=… message=…]`` block; threadline also writes the error as an ``error`` object, and reads either.
Export writes every field threadline keeps, so export → import gives back the same log.

Every reader returns whole conversations or raises `MessageListDeserializationError` naming the file, the message
position and the field; nothing is written until everything has been read and checked (see
`threadline.store.Store.import_conversations`, which writes them in one transaction).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from .._ids import new_id
from ..errors import MessageListDeserializationError, ProtocolError
from ..messages import (
    MODES,
    AssistantMessage,
    Attachment,
    LLMError,
    Message,
    MessageList,
    MessageMeta,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    content_for_model,
    validate_messages,
)
from ._common import now, title_of
from .base import ConversationInfo, ImportItem

__all__ = [
    "export_layout",
    "find_layout",
    "message_from_file",
    "message_to_file",
    "read_layout",
    "read_log_file",
    "write_atomic",
]

_SAFE_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}$")
_ERROR_BLOCK = re.compile(r"\n?\[LLM_ERROR type=(?P<type>\S*) message=(?P<message>.*)\]\Z", re.S)
# UI fields of the old format and where threadline keeps them (``meta.ui``).
_UI_FIELDS = {"partType": "part_type", "isCollapsed": "collapsed", "widget": "widget", "workflowId": "workflow_id"}
_INDEX_KNOWN = {
    "id",
    "title",
    "createdAt",
    "created_at",
    "updatedAt",
    "updated_at",
    "activeType",
    "active_mode",
    "messageCount",
    "metadata",
}


class _Bad(Exception):
    """A problem inside one message; turned into `MessageListDeserializationError` with the file named."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _get(item: Mapping[str, Any], keys: Sequence[str], types: type | tuple[type, ...], what: str) -> Any:
    """The first of ``keys`` present and not null, checked against ``types`` (bool is never an int here)."""
    for key in keys:
        value = item.get(key)
        if value is None:
            continue
        wanted = types if isinstance(types, tuple) else (types,)
        if not isinstance(value, wanted) or (isinstance(value, bool) and bool not in wanted):
            raise _Bad(f"{key}: expected {what}, got {_kind(value)}", key)
        return value
    return None


def _timestamp(value: Any, key: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise _Bad(f"{key}: expected an ISO timestamp or epoch milliseconds, got bool", key)
    if isinstance(value, (int, float)):
        try:
            return datetime.fromtimestamp(value / 1000, UTC)
        except (OverflowError, OSError, ValueError):
            raise _Bad(f"{key}: {value!r} is not a time in epoch milliseconds", key) from None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
        except ValueError:
            raise _Bad(f"{key}: {value!r} is not an ISO timestamp", key) from None
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=UTC)
        try:
            return parsed.astimezone(UTC)
        except OverflowError:  # e.g. 9999-12-31T23:59:59-01:00: one second after the last UTC time there is
            raise _Bad(f"{key}: {value!r} is outside the range of UTC times", key) from None
    raise _Bad(f"{key}: expected an ISO timestamp or epoch milliseconds, got {_kind(value)}", key)


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


# -- one message ---------------------------------------------------------------------------------------------------
def _meta(item: Mapping[str, Any]) -> MessageMeta | None:
    mode = _get(item, ("mode",), str, "a string")
    if mode is not None and mode not in MODES:
        raise _Bad(f"mode: expected one of {', '.join(MODES)}, got {mode!r}", "mode")
    ui: dict[str, Any] = {}
    extra_ui = _get(item, ("ui",), dict, "an object")
    if extra_ui:
        ui.update(extra_ui)
    for old, new in _UI_FIELDS.items():
        if item.get(old) is not None:
            ui[new] = item[old]
    include = item.get("includeInContext")
    include = True if include is None else include
    if not isinstance(include, bool):
        raise _Bad(f"includeInContext: expected a boolean, got {_kind(include)}", "includeInContext")
    fields = {
        "mode": mode,
        "run_id": _get(item, ("runId", "run_id"), str, "a string"),
        "node_id": _get(item, ("nodeId", "node_id"), str, "a string"),
        "agent_id": _get(item, ("agentId", "agent_id"), str, "a string"),
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
        raise _Bad(f"content: expected a string, a list of parts or null, got {_kind(content)}", "content")
    texts: list[str] = []
    images: list[Attachment] = []
    for index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "image_url" and isinstance(part.get("image_url"), Mapping):
            url = part["image_url"].get("url")
            if not isinstance(url, str):
                raise _Bad(f"content[{index}].image_url.url: expected a string", "content")
            if url.startswith("data:"):
                header, _, payload = url.partition(",")
                try:
                    data = base64.b64decode(payload, validate=True)
                except ValueError:
                    raise _Bad(f"content[{index}]: the data URL is not valid base64", "content") from None
                images.append(Attachment("image", data=data, media_type=header[5:].split(";")[0] or None))
            else:
                images.append(Attachment("image", url=url))
        else:
            raise _Bad(f"content[{index}]: unsupported content part {kind!r}", "content")
    return "".join(texts), images


def _tool_call(call: Any, index: int) -> ToolCall:
    where = f"tool_calls[{index}]"
    if not isinstance(call, Mapping) or not isinstance(call.get("id"), str):
        raise _Bad(f"{where}: expected an object with an 'id' string", "tool_calls")
    function = call.get("function")
    if isinstance(function, Mapping):
        name, raw = function.get("name"), function.get("arguments")
    else:
        name, raw = call.get("name"), call.get("arguments")
    if not isinstance(name, str) or not name:
        raise _Bad(f"{where}: missing the tool name", "tool_calls")
    if raw is None or raw == "":
        return ToolCall(id=call["id"], name=name)
    if isinstance(raw, Mapping):
        return ToolCall(id=call["id"], name=name, arguments=dict(raw))
    if not isinstance(raw, str):
        raise _Bad(f"{where}.arguments: expected a JSON string or an object, got {_kind(raw)}", "tool_calls")
    try:
        arguments = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply to parse
        arguments = None
    if isinstance(arguments, dict):
        try:
            return ToolCall(id=call["id"], name=name, arguments=arguments)
        except ValueError:
            pass  # Nested too deeply to keep as a value (see threadline._text.MAX_NESTING): kept as text below.
    # Kept verbatim, as the log keeps arguments that were not a JSON object.
    return ToolCall(id=call["id"], name=name, raw_arguments=raw)


def _error(item: Mapping[str, Any], content: str | None) -> tuple[LLMError | None, str | None]:
    data = item.get("error")
    if data is not None:
        if not isinstance(data, Mapping) or not isinstance(data.get("type"), str):
            raise _Bad("error: expected an object with 'type' and 'message'", "error")
        message, retryable = data.get("message", ""), data.get("retryable", False)
        if not isinstance(message, str) or not isinstance(retryable, bool):
            raise _Bad("error: 'message' must be a string and 'retryable' a boolean", "error")
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
        raise _Bad(f"usage: expected an object, got {_kind(data)}", "usage")
    inputs = data.get("input_tokens", data.get("prompt_tokens", 0))
    outputs = data.get("output_tokens", data.get("completion_tokens", 0))
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (inputs, outputs)):
        raise _Bad("usage: token counts must be non-negative integers", "usage")
    return Usage(input_tokens=inputs, output_tokens=outputs)


def message_from_file(item: Any, names: Mapping[str, str] | None = None) -> Message:
    """One message of a ``messages.json`` file.

    Args:
        item: The decoded JSON object.
        names: Tool names by call id, from earlier assistant messages (old files may not name the tool in results).

    Raises:
        MessageListDeserializationError: naming the field.
    """
    try:
        return _message(item, names or {})
    except _Bad as exc:
        raise MessageListDeserializationError(str(exc), field=exc.field) from None
    except ValueError as exc:  # what a message constructor refuses (a value nested too deeply)
        raise MessageListDeserializationError(str(exc)) from None


def _message(item: Any, names: Mapping[str, str]) -> Message:
    if not isinstance(item, Mapping):
        raise _Bad(f"expected an object, got {_kind(item)}")
    role = _get(item, ("role",), str, "a string")
    if role is None:
        raise _Bad("missing field 'role'", "role")
    message_id = _get(item, ("id",), str, "a string") or new_id()
    created = _timestamp(item.get("createdAt", item.get("created_at")), "createdAt") or now()
    meta = _meta(item)
    common: dict[str, Any] = {"id": message_id, "created_at": created}
    if meta is not None:
        common["meta"] = meta
    content, images = _content(item)
    if role in ("system", "developer"):
        return SystemMessage(content=content or "", **common)
    if role == "user":
        attachments = list(images)
        raw = _get(item, ("attachments",), list, "a list") or []
        for index, data in enumerate(raw):
            try:
                attachments.append(Attachment.from_dict(data))
            except (TypeError, ValueError) as exc:
                raise _Bad(f"attachments[{index}]: {exc}", "attachments") from None
        return UserMessage(content=content or "", attachments=attachments, **common)
    if role == "assistant":
        calls = [_tool_call(call, i) for i, call in enumerate(_get(item, ("tool_calls",), list, "a list") or [])]
        error, content = _error(item, content)
        return AssistantMessage(
            content=content,
            tool_calls=calls,
            error=error,
            model=_get(item, ("model",), str, "a string"),
            usage=_usage(item),
            **common,
        )
    if role == "tool":
        call_id = _get(item, ("tool_call_id", "toolCallId"), str, "a string")
        if call_id is None:
            raise _Bad("missing field 'tool_call_id'", "tool_call_id")
        name = _get(item, ("toolName", "tool_name", "name"), str, "a string") or names.get(call_id) or "unknown"
        is_error = _get(item, ("isError", "is_error"), bool, "a boolean") or False
        duration = _get(item, ("duration", "duration_ms"), (int, float), "a number")
        text = content if content is not None else _json_text(item.get("result", ""))
        return ToolMessage(
            tool_call_id=call_id,
            tool_name=name,
            content=text,
            is_error=is_error,
            duration_ms=float(duration) if duration is not None else None,
            **common,
        )
    raise _Bad(f"role: unknown role {role!r} (expected system, user, assistant or tool)", "role")


def message_to_file(message: Message) -> dict[str, Any]:
    """One message in the file layout's form (a superset of an OpenAI chat message); inverse of
    `message_from_file`."""
    out: dict[str, Any] = {"id": message.id, "role": message.__struct_config__.tag}
    out["createdAt"] = message.created_at.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
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
            out["usage"] = {"input_tokens": message.usage.input_tokens, "output_tokens": message.usage.output_tokens}
    elif isinstance(message, ToolMessage):
        out["content"] = message.content
        out["tool_call_id"] = message.tool_call_id
        out["toolName"] = message.tool_name
        if message.is_error:
            out["isError"] = True
        if message.duration_ms is not None:
            out["duration"] = message.duration_ms
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


def _messages_from_data(data: Any) -> list[Message]:
    """``messages.json`` content: a list of layout messages, or any document `MessageList.from_dict` reads."""
    if isinstance(data, Mapping):
        if "version" in data:
            return list(MessageList.from_dict(data))
        data = data.get("messages")
        if not isinstance(data, list):
            raise MessageListDeserializationError("expected a list of messages or an object with 'messages'")
    if not isinstance(data, list):
        raise MessageListDeserializationError(f"expected a list of messages, got {_kind(data)}")
    out: list[Message] = []
    names: dict[str, str] = {}
    for position, item in enumerate(data):
        try:
            message = _message(item, names)
        except _Bad as exc:
            raise MessageListDeserializationError(
                f"messages[{position}]: {exc}", position=position, field=exc.field
            ) from None
        except ValueError as exc:  # what a message constructor refuses (a value nested too deeply)
            raise MessageListDeserializationError(f"messages[{position}]: {exc}", position=position) from None
        if isinstance(message, AssistantMessage):
            names.update((call.id, call.name) for call in message.tool_calls)
        out.append(message)
    return out


def _checked(messages: list[Message], where: str) -> list[Message]:
    try:
        validate_messages(messages)
    except ProtocolError as exc:
        raise MessageListDeserializationError(f"{where}: {exc}", position=exc.index) from None
    return messages


def _read_json(path: Path) -> Any:
    data = path.read_bytes()
    try:
        return msgspec.json.decode(data)
    except UnicodeDecodeError as exc:
        raise MessageListDeserializationError(
            f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); JSON files are UTF-8"
        ) from None
    except RecursionError:
        raise MessageListDeserializationError(f"{path}: not valid JSON for a log: nested too deeply") from None
    except msgspec.DecodeError as exc:
        if "surrogate" not in str(exc):
            raise MessageListDeserializationError(f"{path}: not valid JSON: {exc}") from None
    # "\ud800" escapes of lone surrogates: JSON allows them, msgspec does not; the stdlib decoder reads them, and the
    # message constructors apply the log's text rule (U+FFFD).
    try:
        return json.loads(data, parse_constant=_refuse_constant)
    except RecursionError:
        raise MessageListDeserializationError(f"{path}: not valid JSON for a log: nested too deeply") from None
    except ValueError as exc:
        raise MessageListDeserializationError(f"{path}: not valid JSON: {exc}") from None


def _refuse_constant(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")


# -- whole files and layouts -----------------------------------------------------------------------------------------
def read_log_file(path: str | os.PathLike[str], conversation_id: str | None = None) -> ImportItem:
    """A single log file (threadline ``2.0``, fluent_llm ``1.0``, a list of OpenAI or layout messages) as a new
    conversation to import.

    Raises:
        MessageListDeserializationError: naming the file, position and field.
    """
    file = Path(path)
    data = _read_json(file)
    try:
        messages = _checked(_messages_from_data(data), str(file))
    except MessageListDeserializationError as exc:
        raise _in_file(exc, file) from None
    stamp = now()
    info = ConversationInfo(
        id=_check_id(conversation_id, file) if conversation_id else new_id(),
        title=title_of(messages),
        created_at=messages[0].created_at if messages else stamp,
        updated_at=stamp,
    )
    return ImportItem(info=info, messages=messages)


def _in_file(exc: MessageListDeserializationError, file: Path) -> MessageListDeserializationError:
    text = str(exc)
    if text.startswith(str(file)):
        return exc
    return MessageListDeserializationError(f"{file}: {text}", position=exc.position, field=exc.field)


def _check_id(value: Any, where: Path) -> str:
    if not isinstance(value, str) or not _SAFE_ID.match(value):
        raise MessageListDeserializationError(
            f"{where}: conversation id {value!r} is not usable (letters, digits, '_', '.', ':', '-'; at most 200)",
            field="id",
        )
    return value


def find_layout(directory: str | os.PathLike[str]) -> Path:
    """The ``conversations`` folder of a layout: ``<dir>/conversations`` or ``<dir>`` itself.

    Raises:
        MessageListDeserializationError: if neither has an ``index.json``.
    """
    root = Path(directory)
    for candidate in (root / "conversations", root):
        if (candidate / "index.json").is_file():
            return candidate
    raise MessageListDeserializationError(f"{root}: no conversations/index.json here (not a conversation layout)")


def read_layout(directory: str | os.PathLike[str]) -> list[ImportItem]:
    """Every conversation of a layout, read and checked; nothing is written.

    Raises:
        MessageListDeserializationError: naming the file, message position and field of the first problem.
    """
    root = find_layout(directory)
    index_file = root / "index.json"
    index = _read_json(index_file)
    if isinstance(index, Mapping):
        index = index.get("conversations")
    if not isinstance(index, list):
        raise MessageListDeserializationError(f"{index_file}: expected a list of conversations")
    items: list[ImportItem] = []
    seen: set[str] = set()
    for position, entry in enumerate(index):
        where = f"{index_file}: conversations[{position}]"
        if not isinstance(entry, Mapping):
            raise MessageListDeserializationError(f"{where}: expected an object, got {_kind(entry)}", position=position)
        conversation_id = _check_id(entry.get("id"), index_file)
        if conversation_id in seen:
            raise MessageListDeserializationError(f"{where}: conversation {conversation_id!r} is listed twice")
        seen.add(conversation_id)
        try:
            info = _entry_info(entry, conversation_id)
        except _Bad as exc:
            raise MessageListDeserializationError(f"{where}.{exc}", position=position, field=exc.field) from None
        messages_file = root / conversation_id / "messages.json"
        messages: list[Message] = []
        if messages_file.exists():
            try:
                messages = _checked(_messages_from_data(_read_json(messages_file)), str(messages_file))
            except MessageListDeserializationError as exc:
                raise _in_file(exc, messages_file) from None
        if info.title is None:
            info = dataclasses.replace(info, title=title_of(messages))
        items.append(ImportItem(info=info, messages=messages))
    return items


def _entry_info(entry: Mapping[str, Any], conversation_id: str) -> ConversationInfo:
    stamp = now()
    created = _timestamp(entry.get("createdAt", entry.get("created_at")), "createdAt") or stamp
    updated = _timestamp(entry.get("updatedAt", entry.get("updated_at")), "updatedAt") or created
    mode = _get(entry, ("activeType", "active_mode"), str, "a string")
    metadata: dict[str, Any] = {}
    extra = _get(entry, ("metadata",), dict, "an object")
    if extra:
        metadata.update(extra)
    metadata.update((key, value) for key, value in entry.items() if key not in _INDEX_KNOWN)
    if mode is not None and mode not in MODES:
        metadata["activeType"] = mode  # Some other app's mode: keep it, but threadline cannot run in it.
        mode = None
    return ConversationInfo(
        id=conversation_id,
        title=_get(entry, ("title",), str, "a string"),
        created_at=created,
        updated_at=updated,
        active_mode=mode,
        metadata=metadata,
    )


def _entry(info: ConversationInfo) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": info.id,
        "title": info.title,
        "createdAt": info.created_at.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z"),
        "updatedAt": info.updated_at.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z"),
        "messageCount": info.message_count,
    }
    if info.active_mode is not None:
        out["activeType"] = info.active_mode
    if info.metadata:
        out["metadata"] = dict(info.metadata)
    return out


def write_atomic(path: Path, data: bytes) -> None:
    """Write a file so a reader sees the old content or the new, never half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def export_layout(
    directory: str | os.PathLike[str], conversations: Iterable[tuple[ConversationInfo, Sequence[Message]]]
) -> Path:
    """Write conversations into ``<directory>/conversations`` (an existing ``index.json`` keeps its other
    entries; entries with the same ids are replaced). Returns the ``conversations`` folder.

    Raises:
        MessageListDeserializationError: if an existing ``index.json`` is not a layout index.
    """
    root = Path(directory) / "conversations"
    index_file = root / "index.json"
    entries: list[Any] = []
    if index_file.exists():
        existing = _read_json(index_file)
        if isinstance(existing, Mapping):
            existing = existing.get("conversations")
        if not isinstance(existing, list):
            raise MessageListDeserializationError(f"{index_file}: expected a list of conversations")
        entries = existing
    for info, messages in conversations:
        _check_id(info.id, index_file)
        body = [message_to_file(message) for message in messages]
        write_atomic(root / info.id / "messages.json", json.dumps(body, ensure_ascii=False, indent=2).encode())
        entries = [e for e in entries if not (isinstance(e, Mapping) and e.get("id") == info.id)]
        entries.append(_entry(info))
    write_atomic(index_file, json.dumps(entries, ensure_ascii=False, indent=2).encode())
    return root
