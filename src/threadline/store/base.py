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
from collections.abc import Sequence

from .._cache_keys import conversation_cache_prefix
from ..message_list import AwaitingCall, call_waits
from ..message_types import ApprovalMessage, AssistantMessage, ToolMessage, UserMessage
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
    "stored_awaiting",
    "whole_tool_groups",
]


class Store(ConversationStore, BrowsableStore, ArtifactStore, CacheStore, PageStore, ABC):
    """A conversation store. Use `threadline.open_store` to get one.

    It offers every capability of `threadline.store.capabilities` (`ConversationStore`, `BrowsableStore`,
    `ArtifactStore`, `CacheStore`, `PageStore`): their abstract methods, whose docstrings there are their contracts,
    and their attributes (``url``, ``checks_append_count``). It inherits their defaults: ``has_conversation``,
    ``try_lease`` (writers of this process only; SQLite and PostgreSQL override it), ``append_checked`` and
    ``cache_get_raw``; and it adds defaults of its own for ``message_position`` and ``search_messages``, and the two
    methods no capability asks for, ``delete_conversation`` and ``import_conversations``.
    """

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

    @abstractmethod
    def import_conversations(self, items: Sequence[ImportItem]) -> list[ConversationInfo]:
        """Create whole conversations (ids, titles, timestamps and logs as given) in one transaction: all or none.

        Raises:
            StoreError: if any of the ids already exists, two messages of one conversation share an id, or a log
                holding approval entries breaks their rules (`threadline.MessageList.validate`): then nothing is
                written.
        """

    def message_position(self, conversation_id: str, message_id: str) -> int:
        """See `BrowsableStore.message_position`. This default counts page by page; the SQL backends count on
        their index."""
        seq = self.message_seq(conversation_id, message_id)
        position = 0
        after = -1
        while True:
            page = self.read_after(conversation_id, after, 1_000)
            position += sum(1 for s in page.seqs if s <= seq)
            if not page.seqs or page.seqs[-1] >= seq:
                return position
            after = page.seqs[-1]

    def search_messages(self, conversation_id: str, query: str, limit: int = 10_000) -> list[tuple[int, str]]:
        """See `BrowsableStore.search_messages`. This default reads the log page by page; the backends answer from
        their full-text index."""
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

    def close(self) -> None:
        """Release connections."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_IN_GROUP = (ToolMessage, ApprovalMessage)  # what follows a call within its group


def whole_tool_groups(store: Store, conversation_id: str, page: MessagePage) -> MessagePage:
    """``page`` made to start with a whole tool group: while it starts with tool results or approval entries, the
    messages before them are read back (by sequence number, a few at a time) to the message that precedes them,
    their call.

    So a page read from the middle of a log (`Store.read_tail`) shows each result with the call it answers.
    """
    messages, seqs, has_older = list(page.messages), list(page.seqs), page.has_older
    while messages and isinstance(messages[0], _IN_GROUP) and has_older:
        more = store.read_tail(conversation_id, 8, before=seqs[0])
        if not more.messages:
            break
        starts = [i for i, message in enumerate(more.messages) if not isinstance(message, _IN_GROUP)]
        start = starts[-1] if starts else 0
        messages[:0], seqs[:0] = more.messages[start:], more.seqs[start:]
        has_older = start > 0 or more.has_older
    return MessagePage(messages, seqs, has_older)


_TAIL_PAGE = 32


def stored_awaiting(store: Store, conversation_id: str) -> list[AwaitingCall]:
    """The calls of a stored conversation that wait, read from the end of its log only (the latest assistant
    message and what follows it), never the whole log: what the CLI's ``awaiting`` and the viewer's list show.

    Raises:
        StoreError: if the store has no conversation with that id.
    """
    page = store.read_tail(conversation_id, _TAIL_PAGE)
    messages, seqs, has_older = list(page.messages), list(page.seqs), page.has_older
    # call_waits walks back to the latest assistant (or user) message: read back until the tail holds one.
    while has_older and seqs and not any(isinstance(m, (AssistantMessage, UserMessage)) for m in messages):
        more = store.read_tail(conversation_id, _TAIL_PAGE, before=seqs[0])
        if not more.messages:
            break
        messages[:0], seqs[:0], has_older = more.messages, more.seqs, more.has_older
    return call_waits(messages).waiting
