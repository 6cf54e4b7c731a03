"""The one storage interface every backend implements.

A store keeps conversations (their metadata and their ordered logs), artifacts (large tool outputs, saved per
conversation), the request cache of ``generate_text`` and generated pages. Methods are synchronous: a local SQLite
commit takes well under a millisecond, so the turn engine persists each message inline, in order, the moment it
exists, and CLI commands use the same calls without an event loop.

Guarantees every backend gives:

- ``append`` is atomic (all of its messages or none), keeps their order, and is idempotent on message id (appending a
  message whose id is already in the conversation does nothing);
- concurrent writers (threads, processes, hosts) never lose or duplicate a message, each writer's order is kept, and
  every reader sees one total order per conversation.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..messages import Message, MessageList

__all__ = ["ConversationInfo", "ImportItem", "PageInfo", "Store"]


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    """A conversation's metadata as the store keeps it."""

    id: str
    title: str | None
    created_at: datetime
    updated_at: datetime
    message_count: int = 0
    active_mode: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PageInfo:
    """A generated page (``Pages.generate_ui``)."""

    id: str
    conversation_id: str | None
    title: str
    html: str
    css: str
    js: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ImportItem:
    """One conversation for `Store.import_conversations`: its metadata (``message_count`` is ignored) and its log."""

    info: ConversationInfo
    messages: Sequence[Message]


class Store(ABC):
    """A conversation store. Use `threadline.open_store` to get one."""

    url: str

    # Conversations
    @abstractmethod
    def create_conversation(
        self, title: str | None = None, metadata: Mapping[str, Any] | None = None, *, id: str | None = None
    ) -> ConversationInfo:
        """Create a conversation (with ``id`` if given; raises `StoreError` if it exists)."""

    @abstractmethod
    def get_conversation(self, conversation_id: str) -> ConversationInfo:
        """Metadata of one conversation. Raises `StoreError` if there is none with that id."""

    def has_conversation(self, conversation_id: str) -> bool:
        """Whether a conversation with that id exists."""
        from ..errors import StoreError

        try:
            self.get_conversation(conversation_id)
        except StoreError:
            return False
        return True

    @abstractmethod
    def list_conversations(self, limit: int = 50, offset: int = 0) -> list[ConversationInfo]:
        """Conversations, most recently updated first."""

    @abstractmethod
    def update_metadata(
        self,
        conversation_id: str,
        *,
        title: str | None = None,
        active_mode: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> ConversationInfo:
        """Change the title, the active mode or merge into the free-form metadata (None leaves a value alone)."""

    @abstractmethod
    def delete_conversation(self, conversation_id: str) -> None:
        """Delete a conversation with its messages and artifacts."""

    # The log
    @abstractmethod
    def append(self, conversation_id: str, messages: Iterable[Message]) -> None:
        """Append messages atomically, in order; messages whose id is already stored are skipped."""

    @abstractmethod
    def load(self, conversation_id: str) -> MessageList:
        """The whole log, in the store's total order."""

    @abstractmethod
    def import_conversations(self, items: Sequence[ImportItem]) -> list[ConversationInfo]:
        """Create whole conversations (ids, titles, timestamps and logs as given) in one transaction: all or none.

        Raises:
            StoreError: if any of the ids already exists (then nothing is written).
        """

    # Artifacts
    @abstractmethod
    def save_artifact(self, conversation_id: str, name: str, content: str) -> str:
        """Save (or replace) a text artifact; returns its URI ``artifact://<conversation>/<name>``."""

    @abstractmethod
    def read_artifact(self, conversation_id: str, name: str, offset: int = 0, limit: int | None = None) -> str:
        """Read ``limit`` characters from ``offset``. Raises `StoreError` if it does not exist."""

    # Request cache
    @abstractmethod
    def cache_get(self, key: str) -> Any | None:
        """A cached JSON value, or None."""

    @abstractmethod
    def cache_put(self, key: str, value: Any) -> None:
        """Cache a JSON-serializable value under a key (replacing any)."""

    # Pages
    @abstractmethod
    def save_page(
        self, title: str, html: str, css: str = "", js: str = "", *, conversation_id: str | None = None
    ) -> PageInfo:
        """Save a generated page; returns it with its new id."""

    @abstractmethod
    def get_page(self, page_id: str) -> PageInfo:
        """A saved page. Raises `StoreError` if there is none with that id."""

    def close(self) -> None:  # noqa: B027 - optional hook with a no-op default
        """Release connections."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
