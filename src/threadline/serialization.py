"""Versioned dict/JSON forms of the log, and the readers of older and foreign formats.

Versions of the threadline format (``{"version": ..., "messages": [...]}``):

- ``"2.0"``: the four message kinds tagged by ``role``; tool calls on assistant messages; tool results as
  ``role: "tool"``; failures as assistant messages with ``error``; ``meta`` omitted when default.

Also read, converting losslessly:

- version ``"1.0"`` of the fluent_llm format (``TextMessage``, ``AgentMessage``, ``ToolCallMessage`` with
  ``result``/``error``): a ``ToolCallMessage`` becomes an assistant tool call followed by its tool result;
- a bare list of OpenAI chat messages (``role``, ``content``, ``tool_calls``, ``tool_call_id``).

Every reader either returns a whole log or raises `MessageListDeserializationError` naming the position and field.
What a reader returns can always be written back: text follows the log's rule (lone surrogates become U+FFFD, see
`threadline._text`), times are in UTC, values nest at most `threadline._text.MAX_NESTING` deep, and no two messages
share an id (stores key messages by id, so a duplicate would be dropped or refused there).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import msgspec

from .errors import MessageListDeserializationError
from .messages import (
    AssistantMessage,
    Attachment,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)

__all__ = [
    "FORMAT_VERSION",
    "decode_message",
    "decode_messages",
    "dump_dict",
    "dump_json",
    "encode_message",
    "load_data",
    "load_json",
]

FORMAT_VERSION = "2.0"


class _Document(msgspec.Struct):
    version: str
    messages: list[Message]


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, Attachment):
        return obj.to_dict()
    raise TypeError(f"cannot serialize {type(obj).__name__}")


def _dec_hook(type_: type, obj: Any) -> Any:
    if type_ is Attachment:
        return Attachment.from_dict(obj)
    raise TypeError(f"cannot read {type_!r}")


_encoder = msgspec.json.Encoder(enc_hook=_enc_hook)
_decoder = msgspec.json.Decoder(_Document, dec_hook=_dec_hook)


_message_decoder = msgspec.json.Decoder(Message, dec_hook=_dec_hook)
_messages_decoder = msgspec.json.Decoder(list[Message], dec_hook=_dec_hook)


def encode_message(message: Message) -> bytes:
    """One message as JSON bytes (the same form it has inside a version-2.0 document); what stores keep per row."""
    try:
        return _encoder.encode(message)
    except UnicodeEncodeError:
        _apply_text_rule(message)
        return _encoder.encode(message)


def _apply_text_rule(message: Message) -> None:
    """Apply the log's text rule again to a message whose text was changed after it was made (an attribute set, a
    ``msgspec.structs.replace``), which its constructor never saw: the message is fixed in place, so what is kept in
    memory and what is written stay the same."""
    message.__post_init__()
    if isinstance(message, AssistantMessage):
        for call in message.tool_calls:
            call.__post_init__()
        if message.error is not None:
            message.error.__post_init__()


def decode_message(data: bytes | str) -> Message:
    """Inverse of `encode_message`.

    Raises:
        MessageListDeserializationError: if ``data`` is not one well-formed message.
    """
    try:
        message: Message = _message_decoder.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError, ValueError, TypeError) as exc:
        raise MessageListDeserializationError(f"not a stored message: {exc}") from None
    return message


def decode_messages(rows: list[bytes]) -> list[Message]:
    """Decode many `encode_message` payloads in one pass (how stores load a whole log).

    Raises:
        MessageListDeserializationError: if any payload is not one well-formed message.
    """
    try:
        messages: list[Message] = _messages_decoder.decode(b"[" + b",".join(rows) + b"]")
    except (msgspec.ValidationError, msgspec.DecodeError, ValueError, TypeError) as exc:
        raise MessageListDeserializationError(f"a stored message is damaged: {exc}") from None
    return messages


def dump_json(messages: list[Message]) -> bytes:
    """Encode messages as version-2.0 JSON bytes."""
    try:
        return _encoder.encode(_Document(version=FORMAT_VERSION, messages=messages))
    except UnicodeEncodeError:
        for message in messages:
            _apply_text_rule(message)
        return _encoder.encode(_Document(version=FORMAT_VERSION, messages=messages))


def dump_dict(messages: list[Message]) -> dict[str, Any]:
    """The version-2.0 form as JSON-ready builtins."""
    result: dict[str, Any] = msgspec.to_builtins(
        _Document(version=FORMAT_VERSION, messages=messages), enc_hook=_enc_hook
    )
    return result


def load_json(text: str | bytes) -> list[Message]:
    """Parse JSON text in any supported format."""
    if not isinstance(text, (str, bytes, bytearray, memoryview)):
        raise MessageListDeserializationError(f"expected JSON text, got {type(text).__name__}")
    try:
        # Fast path: a well-formed version-2.0 document decodes straight into messages.
        document = _decoder.decode(text)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError, UnicodeError):
        pass
    else:
        if document.version == FORMAT_VERSION:
            return _unique_ids(document.messages)
    try:
        data = msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        if "surrogate" not in str(exc):
            raise MessageListDeserializationError(f"not valid JSON: {exc}") from None
        data = _decode_with_lone_surrogates(text)
    except UnicodeError as exc:
        # A str holding lone surrogate characters cannot be UTF-8, so it is not JSON text (the escape "\ud800" is).
        raise MessageListDeserializationError(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise MessageListDeserializationError("not valid JSON for a log: nested too deeply") from None
    return load_data(data)


def _decode_with_lone_surrogates(text: str | bytes | bytearray | memoryview) -> Any:
    """Decode JSON holding ``"\ud800"``-style escapes of lone surrogates, which msgspec refuses but the JSON grammar
    allows (other programs write them for file names that are not UTF-8); the strings they give are then read under
    the log's rule (U+FFFD) by the message constructors."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not a JSON value")

    try:
        return json.loads(bytes(text) if isinstance(text, (bytearray, memoryview)) else text, parse_constant=refuse)
    except ValueError as exc:
        raise MessageListDeserializationError(f"not valid JSON: {exc}") from None
    except RecursionError:
        raise MessageListDeserializationError("not valid JSON for a log: nested too deeply") from None


def load_data(data: Any) -> list[Message]:
    """Read decoded JSON data (dict or list) in any supported format."""
    return _unique_ids(_load_data(data))


def _unique_ids(messages: list[Message]) -> list[Message]:
    """The messages, if no two share an id.

    Raises:
        MessageListDeserializationError: naming the second message with a repeated id.
    """
    ids = {message.id for message in messages}
    if len(ids) == len(messages):
        return messages
    first: dict[str, int] = {}
    for position, message in enumerate(messages):
        if message.id in first:
            raise MessageListDeserializationError(
                f"messages[{position}].id: {message.id!r} is already the id of messages[{first[message.id]}] "
                "(every message needs its own id)",
                position=position,
                field="id",
            )
        first[message.id] = position
    return messages  # pragma: no cover - the set above says a repeat exists


def _load_data(data: Any) -> list[Message]:
    if isinstance(data, list):
        return _read_openai(data)
    if not isinstance(data, Mapping):
        raise MessageListDeserializationError(
            f"expected an object with 'version' and 'messages' or a list of messages, got {_kind(data)}"
        )
    version = data.get("version")
    if "messages" not in data:
        raise MessageListDeserializationError("missing field 'messages'", field="messages")
    if version == FORMAT_VERSION:
        return _read_v2(data)
    if version == "1.0":
        return _read_fluent_v1(data["messages"])
    if version is None:
        raise MessageListDeserializationError("missing field 'version'", field="version")
    raise MessageListDeserializationError(
        f"unsupported version {version!r} (this threadline reads '2.0', and '1.0' of fluent_llm)", field="version"
    )


_PATH = re.compile(r"^(?P<text>.*) - at `\$(?P<path>[^`]*)`$", re.S)
_INDEX = re.compile(r"^\.messages\[(?P<index>\d+)\](?P<rest>.*)$")
_MISSING = re.compile(r"missing required field `(?P<field>[^`]+)`")


def _validation_error(exc: msgspec.ValidationError) -> MessageListDeserializationError:
    """Turn msgspec's ``... - at `$.messages[3].content``` into a message naming the position and field."""
    text = str(exc)
    match = _PATH.match(text)
    if not match:
        return MessageListDeserializationError(text)
    detail, path = match.group("text"), match.group("path")
    position: int | None = None
    index_match = _INDEX.match(path)
    if index_match:
        position = int(index_match.group("index"))
        field = index_match.group("rest").lstrip(".") or None
        where = f"messages[{position}]" + (f".{field}" if field else "")
    else:
        field = path.lstrip(".") or None
        where = field or "document"
    missing = _MISSING.search(detail)
    if missing:
        field = f"{field}.{missing.group('field')}" if field else missing.group("field")
    return MessageListDeserializationError(f"{where}: {detail}", position=position, field=field)


def _read_v2(data: Mapping[str, Any]) -> list[Message]:
    try:
        document = msgspec.convert(data, _Document, dec_hook=_dec_hook)
    except msgspec.ValidationError as exc:
        raise _validation_error(exc) from None
    except RecursionError:
        raise MessageListDeserializationError("a value in the log is nested too deeply") from None
    return document.messages


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _require(
    item: Mapping[str, Any], key: str, types: type | tuple[type, ...], position: int, *, optional: bool = False
) -> Any:
    if key not in item or item[key] is None:
        if optional:
            return None
        raise MessageListDeserializationError(
            f"messages[{position}]: missing field {key!r}", position=position, field=key
        )
    value = item[key]
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in _as_tuple(types)):
        expected = " or ".join(t.__name__ for t in _as_tuple(types))
        raise MessageListDeserializationError(
            f"messages[{position}].{key}: expected {expected}, got {_kind(value)}", position=position, field=key
        )
    return value


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _encode_result(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _read_fluent_v1(items: Any) -> list[Message]:
    if not isinstance(items, list):
        raise MessageListDeserializationError(f"field 'messages' must be a list, got {_kind(items)}", field="messages")
    out: list[Message] = []
    for position, item in enumerate(items):
        with _at(position):
            _read_fluent_item(item, position, out)
    return out


@contextmanager
def _at(position: int) -> Iterator[None]:
    """Turns what a message's constructor refuses (a value nested too deeply, a time with no UTC equivalent) into
    `MessageListDeserializationError` at ``position``."""
    try:
        yield
    except MessageListDeserializationError:
        raise
    except ValueError as exc:
        raise MessageListDeserializationError(f"messages[{position}]: {exc}", position=position) from None
    except RecursionError:
        raise MessageListDeserializationError(f"messages[{position}]: nested too deeply", position=position) from None


def _read_fluent_item(item: Any, position: int, out: list[Message]) -> None:
    if not isinstance(item, Mapping):
        raise MessageListDeserializationError(
            f"messages[{position}]: expected an object, got {_kind(item)}", position=position
        )
    kind = _require(item, "type", str, position)
    if kind == "TextMessage":
        text = _require(item, "text", str, position)
        role = _require(item, "role", str, position)
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
        out.append(SystemMessage(content=_require(item, "text", str, position)))
    elif kind == "ToolCallMessage":
        text = _require(item, "message", str, position, optional=True)
        name = _require(item, "tool_name", str, position)
        call_id = _require(item, "tool_call_id", str, position)
        arguments = _require(item, "arguments", dict, position, optional=True) or {}
        error = item.get("error")
        call = ToolCall(id=call_id, name=name, arguments=dict(arguments))
        out.append(AssistantMessage(content=text or None, tool_calls=[call]))
        if error is not None:
            out.append(ToolMessage(tool_call_id=call_id, tool_name=name, content=_encode_result(error), is_error=True))
        else:
            out.append(ToolMessage(tool_call_id=call_id, tool_name=name, content=_encode_result(item.get("result"))))
    else:
        raise MessageListDeserializationError(
            f"messages[{position}].type: unknown message type {kind!r} "
            "(version 1.0 has TextMessage, AgentMessage, ToolCallMessage)",
            position=position,
            field="type",
        )


def _openai_content(item: Mapping[str, Any], position: int) -> tuple[str | None, list[Attachment]]:
    content = item.get("content")
    if content is None or isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise MessageListDeserializationError(
            f"messages[{position}].content: expected string, list or null, got {_kind(content)}",
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
            attachments.append(_image_from_url(url, where, position))
        else:
            raise MessageListDeserializationError(
                f"{where}: unsupported content part {part_type!r}", position=position, field="content"
            )
    return "".join(texts), attachments


def _image_from_url(url: str, where: str, position: int) -> Attachment:
    if url.startswith("data:"):
        header, _, payload = url.partition(",")
        media_type = header[5:].split(";")[0] or None
        try:
            data = base64.b64decode(payload, validate=True)
        except ValueError:
            raise MessageListDeserializationError(
                f"{where}.image_url.url: data URL is not valid base64", position=position, field="content"
            ) from None
        return Attachment("image", data=data, media_type=media_type)
    return Attachment("image", url=url)


def _read_openai(items: list[Any]) -> list[Message]:
    out: list[Message] = []
    names: dict[str, str] = {}
    for position, item in enumerate(items):
        with _at(position):
            if not isinstance(item, Mapping):
                raise MessageListDeserializationError(
                    f"messages[{position}]: expected an object, got {_kind(item)}", position=position
                )
            role = _require(item, "role", str, position)
            if role in ("system", "developer"):
                text, _ = _openai_content(item, position)
                out.append(SystemMessage(content=text or ""))
            elif role == "user":
                text, attachments = _openai_content(item, position)
                out.append(UserMessage(content=text or "", attachments=attachments))
            elif role == "assistant":
                text, _ = _openai_content(item, position)
                calls = _require(item, "tool_calls", list, position, optional=True) or []
                tool_calls = [_openai_call(call, position, index) for index, call in enumerate(calls)]
                for call in tool_calls:
                    names[call.id] = call.name
                out.append(AssistantMessage(content=text, tool_calls=tool_calls))
            elif role == "tool":
                call_id = _require(item, "tool_call_id", str, position)
                text, _ = _openai_content(item, position)
                name = names.get(call_id) or item.get("name")
                if not isinstance(name, str):
                    name = "unknown"
                out.append(ToolMessage(tool_call_id=call_id, tool_name=name, content=text or ""))
            else:
                raise MessageListDeserializationError(
                    f"messages[{position}].role: unknown role {role!r}", position=position, field="role"
                )
    return out


def _openai_call(call: Any, position: int, index: int) -> ToolCall:
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
    if raw is None or raw == "":
        return ToolCall(id=call_id, name=function["name"], arguments={})
    if isinstance(raw, Mapping):
        return ToolCall(id=call_id, name=function["name"], arguments=dict(raw))
    if not isinstance(raw, str):
        raise MessageListDeserializationError(
            f"{where}.function.arguments: expected a JSON string, got {_kind(raw)}",
            position=position,
            field="tool_calls",
        )
    try:
        arguments = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: arguments nested too deeply to parse
        arguments = None
    if isinstance(arguments, dict):
        try:
            return ToolCall(id=call_id, name=function["name"], arguments=arguments)
        except ValueError:
            pass  # Nested too deeply to keep as a value (see threadline._text.MAX_NESTING): kept as text below.
    # Kept verbatim: the log shows what the model sent, and the loop answers it with an error result.
    return ToolCall(id=call_id, name=function["name"], arguments={}, raw_arguments=raw)
