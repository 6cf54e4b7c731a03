"""`MemoryStore`: the whole `Store` interface in process memory, for tests and for programs that need no persistence.

One lock serializes every operation, so it is safe across threads and gives the same guarantees as the database
backends within one process. Messages are kept as their JSON bytes, so what a caller mutates after appending never
changes the stored log (as with the database backends), and a load returns new message objects.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .._ids import new_id
from ..errors import StoreError
from ..messages import Message, MessageList
from ..serialization import decode_messages, encode_message
from ._common import (
    artifact_uri,
    check_artifact,
    check_metadata,
    check_slice,
    conversation_exists,
    decode_json,
    encode_json,
    missing_artifact,
    missing_conversation,
    missing_page,
    new_page,
    now,
    slice_text,
    unique_messages,
)
from .base import ConversationInfo, ImportItem, PageInfo, Store

__all__ = ["MemoryStore"]


@dataclass
class _Conversation:
    id: str
    title: str | None
    created_at: datetime
    updated_at: datetime
    active_mode: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    rows: list[bytes] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    artifacts: dict[str, str] = field(default_factory=dict)

    def info(self) -> ConversationInfo:
        return ConversationInfo(
            id=self.id,
            title=self.title,
            created_at=self.created_at,
            updated_at=self.updated_at,
            message_count=len(self.rows),
            active_mode=self.active_mode,
            metadata=dict(self.metadata),
        )


class MemoryStore(Store):
    """A store that lives in memory and disappears with the process (``open_store("memory://")``)."""

    def __init__(self) -> None:
        self.url = "memory://"
        self._lock = threading.RLock()
        self._conversations: dict[str, _Conversation] = {}
        self._cache: dict[str, bytes] = {}
        self._pages: dict[str, PageInfo] = {}

    def _get(self, conversation_id: str) -> _Conversation:
        found = self._conversations.get(conversation_id)
        if found is None:
            raise missing_conversation(conversation_id, self.url)
        return found

    def create_conversation(
        self, title: str | None = None, metadata: Mapping[str, Any] | None = None, *, id: str | None = None
    ) -> ConversationInfo:
        conversation_id = id or new_id()
        extra = check_metadata(metadata)
        encode_json(extra, "metadata")  # Refuse what the database backends would refuse.
        with self._lock:
            if conversation_id in self._conversations:
                raise conversation_exists(conversation_id, self.url)
            stamp = now()
            conversation = _Conversation(conversation_id, title, stamp, stamp, metadata=extra)
            self._conversations[conversation_id] = conversation
            return conversation.info()

    def get_conversation(self, conversation_id: str) -> ConversationInfo:
        with self._lock:
            return self._get(conversation_id).info()

    def has_conversation(self, conversation_id: str) -> bool:
        with self._lock:
            return conversation_id in self._conversations

    def list_conversations(self, limit: int = 50, offset: int = 0) -> list[ConversationInfo]:
        check_slice(offset, limit)
        with self._lock:
            ordered = sorted(self._conversations.values(), key=lambda c: (c.updated_at, c.id), reverse=True)
            return [c.info() for c in ordered[offset : offset + limit]]

    def update_metadata(
        self,
        conversation_id: str,
        *,
        title: str | None = None,
        active_mode: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ConversationInfo:
        extra = check_metadata(metadata)
        with self._lock:
            conversation = self._get(conversation_id)
            merged = {**conversation.metadata, **extra}
            encode_json(merged, "metadata")
            if title is not None:
                conversation.title = title
            if active_mode is not None:
                conversation.active_mode = active_mode
            conversation.metadata = merged
            conversation.updated_at = now()
            return conversation.info()

    def delete_conversation(self, conversation_id: str) -> None:
        with self._lock:
            self._get(conversation_id)
            del self._conversations[conversation_id]

    def append(self, conversation_id: str, messages: Iterable[Message]) -> None:
        items = unique_messages(list(messages))
        rows = [(message.id, encode_message(message)) for message in items]
        with self._lock:
            conversation = self._get(conversation_id)
            if not rows:
                return
            for message_id, data in rows:
                if message_id not in conversation.ids:
                    conversation.ids.add(message_id)
                    conversation.rows.append(data)
            conversation.updated_at = now()

    def load(self, conversation_id: str) -> MessageList:
        with self._lock:
            rows = list(self._get(conversation_id).rows)
        return MessageList._from_trusted(decode_messages(rows))

    def import_conversations(self, items: Sequence[ImportItem]) -> list[ConversationInfo]:
        prepared: list[_Conversation] = []
        for item in items:
            info = item.info
            conversation = _Conversation(
                info.id,
                info.title,
                info.created_at,
                info.updated_at,
                active_mode=info.active_mode,
                metadata=check_metadata(info.metadata),
            )
            encode_json(conversation.metadata, "metadata")
            for message in unique_messages(list(item.messages)):
                conversation.ids.add(message.id)
                conversation.rows.append(encode_message(message))
            prepared.append(conversation)
        with self._lock:
            for conversation in prepared:
                if conversation.id in self._conversations:
                    raise conversation_exists(conversation.id, self.url, importing=True)
            if len({c.id for c in prepared}) != len(prepared):
                raise StoreError("the import names one conversation id twice; nothing was imported")
            for conversation in prepared:
                self._conversations[conversation.id] = conversation
            return [c.info() for c in prepared]

    def save_artifact(self, conversation_id: str, name: str, content: str) -> str:
        check_artifact(conversation_id, name, content)
        with self._lock:
            self._get(conversation_id).artifacts[name] = content
        return artifact_uri(conversation_id, name)

    def read_artifact(self, conversation_id: str, name: str, offset: int = 0, limit: int | None = None) -> str:
        check_slice(offset, limit)
        with self._lock:
            conversation = self._conversations.get(conversation_id)
            text = conversation.artifacts.get(name) if conversation is not None else None
        if text is None:
            raise missing_artifact(conversation_id, name)
        return slice_text(text, offset, limit)

    def cache_get(self, key: str) -> Any | None:
        with self._lock:
            data = self._cache.get(key)
        return None if data is None else decode_json(data)

    def cache_put(self, key: str, value: Any) -> None:
        data = encode_json(value, "cache value")
        with self._lock:
            self._cache[key] = data

    def save_page(
        self, title: str, html: str, css: str = "", js: str = "", *, conversation_id: str | None = None
    ) -> PageInfo:
        page = new_page(title, html, css, js, conversation_id)
        with self._lock:
            self._pages[page.id] = page
        return page

    def get_page(self, page_id: str) -> PageInfo:
        with self._lock:
            page = self._pages.get(page_id)
        if page is None:
            raise missing_page(page_id, self.url)
        return page

    def __repr__(self) -> str:
        return f"<MemoryStore {len(self._conversations)} conversations>"
