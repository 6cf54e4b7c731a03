"""The native versioned form of the log: one message as stored bytes, a whole log as a ``{"version", "messages"}``
document (dict or JSON), and `load_json` / `load_data`, which read it and hand older and foreign formats to their
readers (`threadline.serialization.fluent_v1`, `threadline.serialization.openai_chat`).

Versions of the threadline format (``{"version": ..., "messages": [...]}``):

- ``"2.0"``: the four message kinds tagged by ``role``; tool calls on assistant messages; tool results as
  ``role: "tool"``; failures as assistant messages with ``error``; ``meta`` omitted when default.
- ``"2.1"`` (written now): adds ``reasoning`` to assistant messages (`threadline.Reasoning`: text, signature,
  redacted, provider, id, position) and ``reasoning_tokens`` to usage, both omitted when empty, so a log without
  reasoning is the 2.0 form with another version. 2.0 documents read unchanged.
- ``"2.2"``: adds approval entries (``role: "approval"``, `threadline.ApprovalMessage`: a tool call's wait and its
  decision). Written only for a log that holds one, so every other log stays readable by a threadline that knows
  2.1; a document labelled 2.0 or 2.1 that holds one is refused.

Every reader either returns a whole log or raises `MessageListDeserializationError` naming the position and field.
What a reader returns can always be written back: text follows the log's rule (lone surrogates become U+FFFD, see
`threadline._text`), times are in UTC, values nest at most `threadline._text.MAX_NESTING` deep, free-form values
(tool-call arguments, ``meta.ui``) are JSON values, numbers are finite and counts are counts (`checked_values`), and
no two messages share an id (stores key messages by id, so a duplicate would be dropped or refused there).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec

from .._json_values import TOO_DEEP, nested_too_deeply
from .._text import replace_surrogates_in
from ..attachments import Attachment
from ..errors import MessageListDeserializationError
from ..message_fields import MAX_COUNT, problem_field, value_problem
from ..message_types import ApprovalMessage, AssistantMessage, Message
from .fields import decode_json, kind_name
from .fluent_v1 import read_fluent_v1
from .openai_chat import read_openai_chat

__all__ = [
    "FORMAT_VERSION",
    "READABLE_VERSIONS",
    "checked_values",
    "decode_message",
    "decode_messages",
    "dump_dict",
    "dump_json",
    "encode_message",
    "load_data",
    "load_json",
    "typed_decoder",
    "version_for",
]

FORMAT_VERSION = "2.2"
"""The newest version this threadline writes (for a log with approval entries; `version_for` picks per log)."""
READABLE_VERSIONS = frozenset({"2.0", "2.1", "2.2"})
"""The native versions this threadline reads (2.0 is 2.1 without reasoning, 2.1 is 2.2 without approvals)."""
_BEFORE_APPROVALS = "2.1"


def version_for(messages: list[Message]) -> str:
    """The version a log is written as: ``"2.2"`` when it holds an approval entry, else ``"2.1"``."""
    return FORMAT_VERSION if ApprovalMessage in set(map(type, messages)) else _BEFORE_APPROVALS


def _versions_allow(version: str, messages: list[Message]) -> list[Message]:
    """``messages`` if ``version`` can hold all of them (approval entries only from 2.2 on)."""
    if version != FORMAT_VERSION and ApprovalMessage in set(map(type, messages)):
        position = next(index for index, message in enumerate(messages) if type(message) is ApprovalMessage)
        raise MessageListDeserializationError(
            f"messages[{position}]: an approval entry in a version {version!r} document (they exist from 2.2 on)",
            position=position,
            field="role",
        )
    return messages


_T = TypeVar("_T")


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


def typed_decoder(type_: type[_T]) -> msgspec.json.Decoder[_T]:
    """A JSON decoder straight into ``type_``, a type whose fields hold messages in their stored form (attachments
    included): how a value that embeds messages (a cached ``generate_text`` result) is read and checked in one pass.
    It raises what `msgspec.json.Decoder.decode` raises; every message it returns has been checked as
    `decode_message` checks one."""
    return msgspec.json.Decoder(type_, dec_hook=_dec_hook)


def encode_message(message: Message) -> bytes:
    """One message as JSON bytes (the same form it has inside a version-2.1 document); what stores keep per row."""
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
    except (msgspec.ValidationError, msgspec.DecodeError, ValueError, TypeError, RecursionError) as exc:
        raise MessageListDeserializationError(f"not a stored message: {exc}") from None
    return message


def decode_messages(rows: list[bytes]) -> list[Message]:
    """Decode many `encode_message` payloads in one pass (how stores load a whole log).

    Raises:
        MessageListDeserializationError: if any payload is not one well-formed message.
    """
    try:
        messages: list[Message] = _messages_decoder.decode(b"[" + b",".join(rows) + b"]")
    except (msgspec.ValidationError, msgspec.DecodeError, ValueError, TypeError, RecursionError) as exc:
        raise MessageListDeserializationError(f"a stored message is damaged: {exc}") from None
    return messages


def dump_json(messages: list[Message]) -> bytes:
    """Encode messages as JSON bytes of their version (`version_for`)."""
    version = version_for(messages)
    try:
        return _encoder.encode(_Document(version=version, messages=messages))
    except UnicodeEncodeError:
        for message in messages:
            _apply_text_rule(message)
        return _encoder.encode(_Document(version=version, messages=messages))


def dump_dict(messages: list[Message]) -> dict[str, Any]:
    """The document of their version (`version_for`) as JSON-ready builtins."""
    result: dict[str, Any] = msgspec.to_builtins(
        _Document(version=version_for(messages), messages=messages), enc_hook=_enc_hook
    )
    return result


def load_json(text: str | bytes) -> list[Message]:
    """Parse JSON text in any supported format."""
    if not isinstance(text, (str, bytes, bytearray, memoryview)):
        raise MessageListDeserializationError(f"expected JSON text, got {type(text).__name__}")
    try:
        # Fast path: a well-formed version-2.x document decodes straight into messages.
        document = _decoder.decode(text)
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError, UnicodeError):
        pass
    else:
        if document.version in READABLE_VERSIONS:
            # JSON text holds only JSON values: only the numbers their types let through are left to check.
            return _unique_ids(checked_values(_versions_allow(document.version, document.messages), free_form=False))
    try:
        data = decode_json(text)
    except UnicodeError as exc:
        # A str holding lone surrogate characters cannot be UTF-8, so it is not JSON text (the escape "\ud800" is).
        raise MessageListDeserializationError(f"not valid JSON: {exc}") from None
    return load_data(data)


def load_data(data: Any) -> list[Message]:
    """Read decoded JSON data (dict or list) in any supported format.

    Text holding lone surrogates follows the log's rule (they become U+FFFD) wherever it is: in a field the
    message's constructor cleans, and also where msgspec meets it first (a ``role`` tag, a key, a value of the
    wrong type), which it refuses with `UnicodeEncodeError`; the data is then read again with the rule applied.
    """
    try:
        return _unique_ids(checked_values(_load_data(data)))
    except UnicodeError:
        pass
    try:
        cleaned = replace_surrogates_in(data)
    except (ValueError, RecursionError):
        raise _too_deep(data) from None
    return _unique_ids(checked_values(_load_data(cleaned)))


def checked_values(messages: list[Message], *, free_form: bool = True) -> list[Message]:
    """The messages a reader made, if every value in them is one the log keeps exactly (see `value_problem`: the
    checks their declared types leave out).

    Raises:
        MessageListDeserializationError: naming the position and field of the first that is not.
    """
    if not free_form:
        # Decoded from JSON text: the one value left to judge is a token count (an int, by its type), so only a
        # message whose counts are out of range is judged in full (this runs on every `from_json`).
        suspects = [
            position
            for position, message in enumerate(messages)
            if type(message) is AssistantMessage
            and (usage := message.usage) is not None
            and not (
                0 <= usage.input_tokens <= MAX_COUNT
                and 0 <= usage.output_tokens <= MAX_COUNT
                and 0 <= usage.reasoning_tokens <= MAX_COUNT
                and 0 <= usage.cache_read_tokens <= MAX_COUNT
                and 0 <= usage.cache_write_tokens <= MAX_COUNT
                and ((cost := usage.cost) is None or (usd := cost.usd) is None or (usd.is_finite() and usd >= 0))
            )
        ]
        candidates: Any = ((position, messages[position]) for position in suspects)
    else:
        candidates = enumerate(messages)
    for position, message in candidates:
        problem = value_problem(message, free_form=free_form)
        if problem is not None:
            raise MessageListDeserializationError(
                f"messages[{position}].{problem}", position=position, field=problem_field(problem)
            )
    return messages


def _too_deep(data: Any) -> MessageListDeserializationError:
    """The error for a document holding a value nested more than the log keeps (`TOO_DEEP`; here, more than a decoder
    can build), naming the message and field that holds it when it can be found."""
    items = data.get("messages") if isinstance(data, Mapping) else data
    if isinstance(items, list):
        for position, item in enumerate(items):
            fields = item.items() if isinstance(item, Mapping) else [(None, item)]
            for key, value in fields:
                if nested_too_deeply(value):
                    where = f"messages[{position}]" + (f".{key}" if isinstance(key, str) else "")
                    return MessageListDeserializationError(
                        f"{where}: a value is {TOO_DEEP}",
                        position=position,
                        field=key if isinstance(key, str) else None,
                    )
    return MessageListDeserializationError(f"a value in the log is {TOO_DEEP}")


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
        return read_openai_chat(data)
    if not isinstance(data, Mapping):
        raise MessageListDeserializationError(
            f"expected an object with 'version' and 'messages' or a list of messages, got {kind_name(data)}"
        )
    version = data.get("version")
    if "messages" not in data:
        raise MessageListDeserializationError("missing field 'messages'", field="messages")
    if isinstance(version, str) and version in READABLE_VERSIONS:
        return _read_v2(data)
    if version == "1.0":
        return read_fluent_v1(data["messages"])
    if version is None:
        raise MessageListDeserializationError("missing field 'version'", field="version")
    raise MessageListDeserializationError(
        f"unsupported version {version!r} (this threadline reads '2.2', '2.1', '2.0', and '1.0' of fluent_llm)",
        field="version",
    )


_PATH = re.compile(r"^(?P<text>.*) - at (?P<key>`key` in )?`\$(?P<path>[^`]*)`$", re.S)
_INDEX = re.compile(r"^\.messages\[(?P<index>\d+)\](?P<rest>.*)$")
_MISSING = re.compile(r"missing required field `(?P<field>[^`]+)`")


def _validation_error(exc: msgspec.ValidationError) -> MessageListDeserializationError:
    """Turn msgspec's ``... - at `$.messages[3].content``` into a message naming the position and field."""
    text = str(exc)
    match = _PATH.match(text)
    if not match:
        return MessageListDeserializationError(text)
    detail, path = match.group("text"), match.group("path")
    if match.group("key"):  # a key of a free-form field (tool-call arguments, meta.ui), not a value
        detail = f"a key: {detail}"
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
        raise _too_deep(data) from None
    return _versions_allow(document.version, document.messages)
