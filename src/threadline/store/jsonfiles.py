"""Import and export of the JSON-file layout (docs/file-format.md#the-json-file-layout): its files and
folders, the ``index.json`` entries, and writing files atomically::

    <dir>/conversations/index.json            [{"id", "title", "createdAt", "updatedAt", "activeType", ...}, ...]
    <dir>/conversations/<id>/messages.json    [{"id", "role", "createdAt", "content", "tool_calls",
                                                "tool_call_id", "toolName", "duration", "mode", ...}, ...]

Messages there are a superset of OpenAI chat messages, read and written by `threadline.serialization.file_messages`
(re-exported here: `message_from_file`, `message_to_file`). Export writes every field threadline keeps, so export →
import gives back the same log.

Every reader returns whole conversations or raises `MessageListDeserializationError` naming the file, the message
position and the field; nothing is written until everything has been read and checked (see
`threadline.store.Store.import_conversations`, which writes them in one transaction).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._ids import new_id
from ..errors import MessageListDeserializationError, ProtocolError
from ..message_list import validate_messages
from ..message_types import MODES, Message
from ..serialization.fields import FieldError, decode_json, first_field, iso_timestamp, kind_name, parse_timestamp
from ..serialization.file_messages import message_from_file, message_to_file, messages_from_file_data
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


def _checked(messages: list[Message], where: str) -> list[Message]:
    try:
        validate_messages(messages)
    except ProtocolError as exc:
        raise MessageListDeserializationError(f"{where}: {exc}", position=exc.index) from None
    return messages


def _read_json(path: Path) -> Any:
    try:
        return decode_json(path.read_bytes())
    except UnicodeDecodeError as exc:
        raise MessageListDeserializationError(
            f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); JSON files are UTF-8"
        ) from None
    except MessageListDeserializationError as exc:
        raise MessageListDeserializationError(f"{path}: {exc}") from None


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
        messages = _checked(messages_from_file_data(data), str(file))
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
            raise MessageListDeserializationError(
                f"{where}: expected an object, got {kind_name(entry)}", position=position
            )
        conversation_id = _check_id(entry.get("id"), index_file)
        if conversation_id in seen:
            raise MessageListDeserializationError(f"{where}: conversation {conversation_id!r} is listed twice")
        seen.add(conversation_id)
        try:
            info = _entry_info(entry, conversation_id)
        except FieldError as exc:
            raise MessageListDeserializationError(f"{where}.{exc}", position=position, field=exc.field) from None
        messages_file = root / conversation_id / "messages.json"
        messages: list[Message] = []
        if messages_file.exists():
            try:
                messages = _checked(messages_from_file_data(_read_json(messages_file)), str(messages_file))
            except MessageListDeserializationError as exc:
                raise _in_file(exc, messages_file) from None
        else:
            # A conversation without messages may have no file; one the index says has messages must.
            count = entry.get("messageCount", entry.get("message_count"))
            if isinstance(count, int) and not isinstance(count, bool) and count > 0:
                raise MessageListDeserializationError(
                    f"{messages_file}: missing, but {where} says the conversation has {count} messages; nothing "
                    "was imported",
                    position=position,
                )
        if info.title is None:
            info = dataclasses.replace(info, title=title_of(messages))
        items.append(ImportItem(info=info, messages=messages))
    return items


def _entry_info(entry: Mapping[str, Any], conversation_id: str) -> ConversationInfo:
    stamp = now()
    created = parse_timestamp(entry.get("createdAt", entry.get("created_at")), "createdAt") or stamp
    updated = parse_timestamp(entry.get("updatedAt", entry.get("updated_at")), "updatedAt") or created
    mode = first_field(entry, ("activeType", "active_mode"), str, "a string")
    metadata: dict[str, Any] = {}
    extra = first_field(entry, ("metadata",), dict, "an object")
    if extra:
        metadata.update(extra)
    metadata.update((key, value) for key, value in entry.items() if key not in _INDEX_KNOWN)
    if mode is not None and mode not in MODES:
        metadata["activeType"] = mode  # Some other app's mode: keep it, but threadline cannot run in it.
        mode = None
    return ConversationInfo(
        id=conversation_id,
        title=first_field(entry, ("title",), str, "a string"),
        created_at=created,
        updated_at=updated,
        active_mode=mode,
        metadata=metadata,
    )


def _entry(info: ConversationInfo) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": info.id,
        "title": info.title,
        "createdAt": iso_timestamp(info.created_at),
        "updatedAt": iso_timestamp(info.updated_at),
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
