"""`MemoryStore`: the whole `Store` interface in process memory, for tests and for programs that need no persistence.

One lock serializes every operation, so it is safe across threads and gives the same guarantees as the database
backends within one process. Messages are kept as their JSON bytes, so what a caller mutates after appending never
changes the stored log (as with the database backends), and a load returns new message objects.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .._artifact_names import artifact_uri
from .._ids import new_id
from .._page_ids import page_ids
from ..errors import StoreError
from ..message_list import MessageList
from ..message_types import Message
from ..serialization import decode_message, decode_messages, encode_message
from ._common import (
    check_artifact,
    check_metadata,
    check_slice,
    conversation_exists,
    decode_cache_value,
    different_message,
    distinct_messages,
    encode_json,
    fork_title,
    missing_artifact,
    missing_conversation,
    missing_message,
    missing_page,
    new_page,
    now,
    own_cache_keys,
    page_heirs,
    same_stored,
    slice_text,
    store_text,
    unique_messages,
)
from ._search import conversation_figures, fork_end, query_words, search_text, snippet, words_match
from .base import (
    ConversationInfo,
    ConversationSummary,
    ImportItem,
    MessagePage,
    PageInfo,
    Store,
    conversation_cache_prefix,
)
from .leases import appended_behind

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
    ids: dict[str, int] = field(default_factory=dict)  # message id -> seq (its index in rows)
    texts: list[str] = field(default_factory=list)  # each row's search text
    artifacts: dict[str, str] = field(default_factory=dict)
    shared_pages: set[str] = field(default_factory=set)  # other conversations' pages its log shows (a fork's)
    model: str | None = None
    failures: int = 0
    forked_from: str | None = None

    def add(self, message: Message, data: bytes) -> bool:
        """Store one message unless its id is here already; keeps the figures and search text in step."""
        if message.id in self.ids:
            return False
        self.ids[message.id] = len(self.rows)
        self.rows.append(data)
        self.texts.append(search_text(message))
        model, failures = conversation_figures((message,))
        self.model = model or self.model
        self.failures += failures
        return True

    def summary(self, match_id: str | None = None, snippet: str | None = None, matches: int = 0) -> ConversationSummary:
        return ConversationSummary(
            self.info(),
            self.model,
            self.failures,
            self.forked_from,
            match_id=match_id,
            snippet=snippet,
            matches=matches,
        )

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
            conversation = _Conversation(conversation_id, store_text(title), stamp, stamp, metadata=extra)
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
                conversation.title = store_text(title)
            if active_mode is not None:
                conversation.active_mode = store_text(active_mode)
            conversation.metadata = merged
            conversation.updated_at = now()
            return conversation.info()

    def delete_conversation(self, conversation_id: str) -> None:
        with self._lock:
            self._get(conversation_id)
            del self._conversations[conversation_id]
            others = [c for c in self._conversations if c.startswith(f"{conversation_id}:")]
            prefix = conversation_cache_prefix(conversation_id)
            for key in own_cache_keys(conversation_id, [k for k in self._cache if k.startswith(prefix)], others):
                del self._cache[key]
            sharers = sorted(self._conversations.values(), key=lambda c: (c.created_at, c.id))
            owned = [page for page in self._pages.values() if page.conversation_id == conversation_id]
            heirs = page_heirs([(page.id, c.id) for page in owned for c in sharers if page.id in c.shared_pages])
            for page in owned:
                heir = heirs.get(page.id)
                if heir is None:
                    del self._pages[page.id]
                else:
                    self._pages[page.id] = dataclasses.replace(page, conversation_id=heir)
                    self._conversations[heir].shared_pages.discard(page.id)

    def append(self, conversation_id: str, messages: Iterable[Message], *, expected_count: int | None = None) -> None:
        self._append_items(conversation_id, unique_messages(list(messages)), expected_count)

    def append_checked(self, conversation_id: str, messages: Sequence[Message], expected_count: int) -> None:
        if type(self).append is not MemoryStore.append:  # a subclass's own append (a wrapper) stays on the path
            super().append_checked(conversation_id, messages, expected_count)
            return
        # The writer checked each message's fields (`field_problem`) already: they are not checked twice.
        self._append_items(conversation_id, unique_messages(list(messages), check_fields=False), expected_count)

    def _append_items(self, conversation_id: str, items: list[Message], expected_count: int | None) -> None:
        rows = [(message, encode_message(message)) for message in items]
        with self._lock:
            conversation = self._get(conversation_id)
            if not rows:
                return
            if expected_count is not None and len(conversation.rows) != expected_count:
                stored = conversation.ids
                if all(m.id in stored and same_stored(conversation.rows[stored[m.id]], data) for m, data in rows):
                    return  # a repeat of an append that was done
                raise appended_behind(conversation_id, expected_count, len(conversation.rows))
            for message, data in rows:
                seq = conversation.ids.get(message.id)
                if seq is not None and not same_stored(conversation.rows[seq], data):
                    raise different_message(conversation_id, message.id, self.url)
            for message, data in rows:
                conversation.add(message, data)
            conversation.updated_at = now()

    def load(self, conversation_id: str) -> MessageList:
        with self._lock:
            rows = list(self._get(conversation_id).rows)
        return MessageList.unchecked(decode_messages(rows))

    def read_tail(self, conversation_id: str, limit: int, *, before: int | None = None) -> MessagePage:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        with self._lock:
            rows = self._get(conversation_id).rows
            end = len(rows) if before is None else max(0, min(before, len(rows)))
            start = max(0, end - limit)
            chosen = rows[start:end]
        return MessagePage(decode_messages(chosen), list(range(start, end)), start > 0)

    def read_after(self, conversation_id: str, after: int, limit: int | None = None) -> MessagePage:
        check_slice(0, limit)
        with self._lock:
            rows = self._get(conversation_id).rows
            start = max(0, after + 1)
            end = len(rows) if limit is None else min(len(rows), start + limit)
            chosen = rows[start:end]
        return MessagePage(decode_messages(chosen), list(range(start, start + len(chosen))), bool(chosen) and start > 0)

    def message_seq(self, conversation_id: str, message_id: str) -> int:
        with self._lock:
            seq = self._get(conversation_id).ids.get(message_id)
        if seq is None:
            raise missing_message(conversation_id, message_id)
        return seq

    def _ordered(self) -> list[_Conversation]:
        return sorted(self._conversations.values(), key=lambda c: (c.updated_at, c.id), reverse=True)

    def list_summaries(self, limit: int = 50, offset: int = 0) -> list[ConversationSummary]:
        check_slice(offset, limit)
        with self._lock:
            return [c.summary() for c in self._ordered()[offset : offset + limit]]

    def search_conversations(self, query: str, limit: int = 50, offset: int = 0) -> list[ConversationSummary]:
        check_slice(offset, limit)
        words = query_words(query)
        if not words:
            return []
        found: list[ConversationSummary] = []
        with self._lock:
            for conversation in self._ordered():
                hits = [seq for seq, text in enumerate(conversation.texts) if words_match(words, text)]
                if hits:
                    hit = hits[-1]
                    message_id = decode_message(conversation.rows[hit]).id
                    found.append(conversation.summary(message_id, snippet(conversation.texts[hit], words), len(hits)))
                elif all(word in (conversation.title or "").lower() for word in words):
                    found.append(conversation.summary())
        return found[offset : offset + limit]

    def search_messages(self, conversation_id: str, query: str, limit: int = 10_000) -> list[tuple[int, str]]:
        check_slice(0, limit)
        words = query_words(query)
        with self._lock:
            conversation = self._get(conversation_id)
            if not words:
                return []
            seqs = [seq for seq, text in enumerate(conversation.texts) if words_match(words, text)][:limit]
            return [(seq, decode_message(conversation.rows[seq]).id) for seq in seqs]

    def message_position(self, conversation_id: str, message_id: str) -> int:
        return self.message_seq(conversation_id, message_id) + 1  # seq is the index in the log here

    def fork_conversation(
        self, conversation_id: str, at: str, *, title: str | None = None, id: str | None = None
    ) -> ConversationInfo:
        fork_id = id or new_id()
        with self._lock:
            source = self._get(conversation_id)
            seq = source.ids.get(at)
            if seq is None:
                raise missing_message(conversation_id, at)
            if fork_id in self._conversations:
                raise conversation_exists(fork_id, self.url)
            messages = decode_messages(source.rows)
            cut = seq + 1 + fork_end(messages[seq + 1 :])
            stamp = now()
            if title is None:
                siblings = (c.title for c in self._conversations.values() if c.forked_from == conversation_id)
                title = fork_title(source.title, siblings)
            fork = _Conversation(
                fork_id,
                store_text(title),
                stamp,
                stamp,
                active_mode=source.active_mode,
                metadata={**source.metadata, "forked_from": {"conversation": conversation_id, "message": at}},
                forked_from=conversation_id,
            )
            for message, data in zip(messages[:cut], source.rows[:cut], strict=True):
                fork.add(message, data)
            fork.shared_pages = {page_id for page_id in page_ids(messages[:cut]) if page_id in self._pages}
            self._conversations[fork_id] = fork
            return fork.info()

    def list_forks(self, conversation_id: str) -> list[ConversationInfo]:
        with self._lock:
            forks = [c for c in self._conversations.values() if c.forked_from == conversation_id]
            return [c.info() for c in sorted(forks, key=lambda c: (c.created_at, c.id))]

    def import_conversations(self, items: Sequence[ImportItem]) -> list[ConversationInfo]:
        prepared: list[_Conversation] = []
        for item in items:
            info = item.info
            conversation = _Conversation(
                info.id,
                store_text(info.title),
                info.created_at,
                info.updated_at,
                active_mode=store_text(info.active_mode),
                metadata=check_metadata(info.metadata),
            )
            encode_json(conversation.metadata, "metadata")
            for message in distinct_messages(item.messages, info.id):
                conversation.add(message, encode_message(message))
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
        content = check_artifact(conversation_id, name, content)
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
        data = self.cache_get_raw(key)
        return None if data is None else decode_cache_value(data, key)

    def cache_get_raw(self, key: str) -> bytes | None:
        with self._lock:
            return self._cache.get(key)

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

    def list_pages(self, conversation_id: str) -> list[PageInfo]:
        with self._lock:
            pages = [page for page in self._pages.values() if page.conversation_id == conversation_id]
        return sorted(pages, key=lambda page: (page.created_at, page.id))

    def __repr__(self) -> str:
        return f"<MemoryStore {len(self._conversations)} conversations>"
