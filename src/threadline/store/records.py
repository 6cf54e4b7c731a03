"""What a store hands back: a conversation's metadata (`ConversationInfo`), a row of a list
(`ConversationSummary`), a page of a log (`MessagePage`), a generated page (`PageInfo`), and what an import takes
(`ImportItem`). `threadline.store.base` and `threadline.store` export them too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..message_types import Message

__all__ = ["ConversationInfo", "ConversationSummary", "ImportItem", "MessagePage", "PageInfo"]


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
class ConversationSummary:
    """A conversation as a list of conversations shows it (`Store.list_summaries`, `Store.search_conversations`).

    Attributes:
        info: Its metadata; ``info.updated_at`` is its last activity.
        model: The model of its latest assistant message, if any.
        failures: How many failed model calls its log holds.
        forked_from: The conversation it was forked from, if it is a fork.
        match_id: For a search by message text: the newest message that matched.
        snippet: For a search by message text: a short excerpt of that message around the first match.
        matches: For a search by message text: how many of its messages matched.
    """

    info: ConversationInfo
    model: str | None = None
    failures: int = 0
    forked_from: str | None = None
    match_id: str | None = None
    snippet: str | None = None
    matches: int = 0


@dataclass(frozen=True, slots=True)
class MessagePage:
    """A run of consecutive messages of one log, read by sequence number (`Store.read_tail`, `Store.read_after`).

    Attributes:
        messages: The messages, in log order.
        seqs: Their sequence numbers (same length and order as ``messages``).
        has_older: Whether the log holds messages before the first one here.
    """

    messages: list[Message]
    seqs: list[int]
    has_older: bool = False

    @property
    def first_seq(self) -> int | None:
        """The sequence number of the first message, or None for an empty page."""
        return self.seqs[0] if self.seqs else None

    @property
    def last_seq(self) -> int | None:
        """The sequence number of the last message, or None for an empty page."""
        return self.seqs[-1] if self.seqs else None


@dataclass(frozen=True, slots=True)
class ImportItem:
    """One conversation for `Store.import_conversations`: its metadata (``message_count`` is ignored) and its log."""

    info: ConversationInfo
    messages: Sequence[Message]
