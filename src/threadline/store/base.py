"""The one storage interface every backend implements.

A store keeps conversations (their metadata and their ordered logs), artifacts (large tool outputs, saved per
conversation), the request cache of ``generate_text`` and generated pages. Methods are synchronous: a local SQLite
commit takes well under a millisecond, so the turn engine persists each message inline, in order, the moment it
exists, and CLI commands use the same calls without an event loop.

Guarantees every backend gives:

- ``append`` is atomic (all of its messages or none), keeps their order, and is idempotent on message id (appending a
  message that is already in the conversation does nothing, so a retry after a crash is safe), while a *different*
  message with an id the conversation already holds is refused with `StoreError` (nothing is appended);
- concurrent writers (threads, processes, hosts) never lose or duplicate a message, each writer's order is kept, and
  every reader sees one total order per conversation;
- ``try_lease`` gives one writer at a time a conversation's lease, which a turn holds from the messages it adds to
  its last answer, so no other writer's message lands inside its tool group; a lease dies with its holder.

Each stored message has a sequence number (``seq``): increasing in the conversation's order, not necessarily
consecutive. The viewer reads a log by sequence number (the newest page, older pages, what came after the last one it
showed) without loading the whole log. The store keeps each conversation's list figures (latest model, failures) in
step with every append, import and fork, and a full-text index of every message: a search covers every message
stored before it (SQLite indexes what was appended since the last search, in bulk, before it searches, so an append
pays nothing for the index).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from .._cache_keys import conversation_cache_prefix
from ..message_list import MessageList
from ..message_types import Message, ToolMessage
from ._search import query_words, search_text, words_match
from .capabilities import ArtifactStore, BrowsableStore, CacheStore, ConversationStore, PageStore
from .records import ConversationInfo, ConversationSummary, ImportItem, MessagePage, PageInfo

__all__ = [
    "ConversationInfo",
    "ConversationSummary",
    "ImportItem",
    "MessagePage",
    "PageInfo",
    "Store",
    "conversation_cache_prefix",
    "whole_tool_groups",
]


class Store(ConversationStore, BrowsableStore, ArtifactStore, CacheStore, PageStore, ABC):
    """A conversation store. Use `threadline.open_store` to get one.

    It offers every capability of `threadline.store.capabilities` (`ConversationStore`, `BrowsableStore`,
    `ArtifactStore`, `CacheStore`, `PageStore`), and inherits their defaults: ``has_conversation``, ``try_lease``
    (writers of this process only; SQLite and PostgreSQL override it), ``append_checked`` and ``cache_get_raw``.

    Attributes:
        url: Where the store is.
        checks_append_count: Whether `append` takes ``expected_count`` and honours it (every store of threadline
            does). A store whose ``append`` predates it declares ``checks_append_count = False``: a conversation
            then calls it without the count, and the lease alone keeps other writers out. A store that declares
            nothing and does not take it is refused by `append_checked` with a `StoreError` saying so.
    """

    url: str
    checks_append_count: ClassVar[bool] = True

    # Conversations
    @abstractmethod
    def create_conversation(
        self, title: str | None = None, metadata: Mapping[str, Any] | None = None, *, id: str | None = None
    ) -> ConversationInfo:
        """Create a conversation (with ``id`` if given; raises `StoreError` if it exists)."""

    @abstractmethod
    def get_conversation(self, conversation_id: str) -> ConversationInfo:
        """Metadata of one conversation. Raises `StoreError` if there is none with that id."""

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
        """Delete a conversation with everything it left in the store, in one transaction: its messages (and
        their search index), its artifacts, its cached context summaries (keys under `conversation_cache_prefix`)
        and the pages it made (``Pages.generate_ui``), so none of them stays reachable (the viewer answers 404 at
        ``/p/<page_id>``).

        A page that a fork of it also shows (the fork copied the tool result that made it, see
        `fork_conversation`) is not deleted while such a fork remains: it passes to the oldest of them (its
        ``conversation_id`` becomes that fork's, and ``list_pages`` lists it there), and goes when that one is
        deleted in turn. The fork's log holds the page's code anyway, so deleting the page would take nothing
        private away and would only break the fork.

        Raises:
            StoreError: if there is no conversation with that id (then nothing is deleted).
        """

    # The log
    @abstractmethod
    def append(self, conversation_id: str, messages: Iterable[Message], *, expected_count: int | None = None) -> None:
        """Append messages atomically, in order; messages already stored (same id, same content) are skipped.

        Args:
            conversation_id: The conversation.
            messages: The messages, in order.
            expected_count: If given, append only if the conversation holds exactly this many messages (the
                writer's view of the log is complete); otherwise raise `ConversationBusy` and append nothing. An
                append whose messages are all stored already (as they are) is a repeat, and does nothing whatever
                the count: a writer that cannot tell whether its append committed (its connection was lost) tries
                it again safely.

        Raises:
            StoreError: if the conversation does not exist, or holds a different message with one of these ids
                (then nothing is appended).
            ConversationBusy: if ``expected_count`` is given and does not match.
        """

    @abstractmethod
    def load(self, conversation_id: str) -> MessageList:
        """The whole log, in the store's total order."""

    @abstractmethod
    def read_tail(self, conversation_id: str, limit: int, *, before: int | None = None) -> MessagePage:
        """The ``limit`` newest messages whose sequence number is below ``before`` (the newest of all when None),
        in log order, without reading the rest of the log.

        Raises:
            StoreError: if there is no conversation with that id.
            ValueError: if ``limit`` is below 1.
        """

    @abstractmethod
    def read_after(self, conversation_id: str, after: int, limit: int | None = None) -> MessagePage:
        """Messages whose sequence number is above ``after`` (at most ``limit``), in log order: what was appended
        since a reader last looked. ``after=-1`` reads from the start.

        Raises:
            StoreError: if there is no conversation with that id.
        """

    @abstractmethod
    def message_seq(self, conversation_id: str, message_id: str) -> int:
        """The sequence number of one message.

        Raises:
            StoreError: if the conversation has no message with that id.
        """

    def message_position(self, conversation_id: str, message_id: str) -> int:
        """Where a message stands in its log: 1 for the first message, ``n`` for the ``n``-th.

        This default counts page by page; the SQL backends count on their index.

        Raises:
            StoreError: if the conversation has no message with that id.
        """
        seq = self.message_seq(conversation_id, message_id)
        position = 0
        after = -1
        while True:
            page = self.read_after(conversation_id, after, 1_000)
            position += sum(1 for s in page.seqs if s <= seq)
            if not page.seqs or page.seqs[-1] >= seq:
                return position
            after = page.seqs[-1]

    @abstractmethod
    def list_summaries(self, limit: int = 50, offset: int = 0) -> list[ConversationSummary]:
        """Conversations, most recently active first, with the figures a list shows (model, failures, fork)."""

    @abstractmethod
    def search_conversations(self, query: str, limit: int = 50, offset: int = 0) -> list[ConversationSummary]:
        """Conversations whose title or one of whose messages holds every word of ``query`` (words match as
        prefixes, case-insensitively), most recently active first. A match in a message sets ``match_id`` and
        ``snippet``. A query with no words matches nothing.
        """

    def search_messages(self, conversation_id: str, query: str, limit: int = 10_000) -> list[tuple[int, str]]:
        """The messages of one conversation that hold every word of ``query`` (as `search_conversations` matches
        them), in log order, as ``(sequence number, message id)`` pairs; at most ``limit`` of them, the oldest first.

        This default reads the log page by page; the backends answer from their full-text index.

        Raises:
            StoreError: if there is no conversation with that id.
        """
        words = query_words(query)
        if not words:
            self.get_conversation(conversation_id)
            return []
        found: list[tuple[int, str]] = []
        after = -1
        while len(found) < limit:
            page = self.read_after(conversation_id, after, 500)
            if not page.messages:
                break
            for seq, message in zip(page.seqs, page.messages, strict=True):
                if words_match(words, search_text(message)):
                    found.append((seq, message.id))
            after = page.seqs[-1]
        return found[:limit]

    @abstractmethod
    def fork_conversation(
        self, conversation_id: str, at: str, *, title: str | None = None, id: str | None = None
    ) -> ConversationInfo:
        """Copy a conversation's log up to message ``at`` into a new conversation, recorded as forked from
        ``<conversation_id>@<at>`` (``metadata["forked_from"]``). When ``at`` made tool calls (or is one of their
        results), the fork keeps the rest of that tool group, so it never ends half-answered. The original is left
        untouched. Unless ``title`` is given, the fork is named after the original: ``"<title> (fork)"``, numbered
        past the titles of the original's other forks (``"(fork 2)"``…), so no two rows of a list look the same. It
        takes the original's active mode.

        The pages its copied log shows (made by ``Pages.generate_ui`` in the original, or shared with it) are shared
        with the fork: they stay reachable while either conversation does (see `delete_conversation`).

        Raises:
            StoreError: if there is no such conversation or message, or ``id`` is taken.
        """

    @abstractmethod
    def list_forks(self, conversation_id: str) -> list[ConversationInfo]:
        """The conversations forked from this one, oldest first (``metadata["forked_from"]["message"]`` says
        where each one left it)."""

    @abstractmethod
    def import_conversations(self, items: Sequence[ImportItem]) -> list[ConversationInfo]:
        """Create whole conversations (ids, titles, timestamps and logs as given) in one transaction: all or none.

        Raises:
            StoreError: if any of the ids already exists, or two messages of one conversation share an id (then
                nothing is written).
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
        """A cached JSON value, or None.

        Raises:
            StoreError: if the stored value is damaged (not JSON).
        """

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

    @abstractmethod
    def list_pages(self, conversation_id: str) -> list[PageInfo]:
        """The pages saved under a conversation, oldest first (none for an unknown id)."""

    def close(self) -> None:
        """Release connections."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def whole_tool_groups(store: Store, conversation_id: str, page: MessagePage) -> MessagePage:
    """``page`` made to start with a whole tool group: while it starts with tool results, the messages before them
    are read back (by sequence number, a few at a time) to the message that precedes them, their call.

    So a page read from the middle of a log (`Store.read_tail`) shows each result with the call it answers.
    """
    messages, seqs, has_older = list(page.messages), list(page.seqs), page.has_older
    while messages and isinstance(messages[0], ToolMessage) and has_older:
        more = store.read_tail(conversation_id, 8, before=seqs[0])
        if not more.messages:
            break
        starts = [i for i, message in enumerate(more.messages) if not isinstance(message, ToolMessage)]
        start = starts[-1] if starts else 0
        messages[:0], seqs[:0] = more.messages[start:], more.seqs[start:]
        has_older = start > 0 or more.has_older
    return MessagePage(messages, seqs, has_older)
