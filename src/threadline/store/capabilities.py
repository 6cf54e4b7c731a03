"""What each user of a store needs of it: `ConversationStore`, and the capabilities a store may offer besides.

A `Conversation` (and its host, and ``generate_text(store=...)``) needs `ConversationStore` only: six methods to
write (create, get, update the metadata, load, append, fork) and three it inherits (``has_conversation``,
``try_lease``, ``append_checked``) when a store subclasses it. The rest are capabilities, each named for who needs
it:

- `BrowsableStore`: the viewer's and the command line's listing, search and paging by sequence number;
- `ArtifactStore`: large tool outputs saved per conversation (the viewer reads them; a conversation whose store
  lacks it keeps them in memory, as without a store: they are made again from the log);
- `CacheStore`: ``generate_text(cache=...)``'s request cache (a conversation whose store lacks it keeps its context
  summaries in memory);
- `PageStore`: the pages ``toolboxes.Pages`` makes and the viewer shows.

`threadline.store.Store`, the base of the built-in backends, offers them all. Each user checks for what it needs
where it is handed a store (`require`), and refuses a store that lacks it with a `UserError` naming the capability
and the methods missing (docs/architecture.md#store-capabilities).
"""

from __future__ import annotations

import inspect
from abc import abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from ..errors import StoreError, UserError

if TYPE_CHECKING:
    from ..message_list import MessageList
    from ..message_types import Message
    from .leases import Lease
    from .records import ConversationInfo, ConversationSummary, MessagePage, PageInfo

__all__ = [
    "ArtifactStore",
    "BrowsableStore",
    "CacheStore",
    "ConversationStore",
    "PageStore",
    "missing_methods",
    "require",
]


@runtime_checkable
class ConversationStore(Protocol):
    """What a `Conversation` needs of a store: keep its metadata and its log, and give one writer at a time.

    Subclass it to write your own backend: implement the six abstract methods (each one's docstring is its contract,
    which every store of threadline keeps too) and set ``url``; ``has_conversation``, ``try_lease`` and
    ``append_checked`` come with it. ``try_lease``'s default excludes writers of this process only: a store shared
    between processes overrides it.

    Attributes:
        url: Where the store is (shown in errors).
        checks_append_count: Whether `append` takes ``expected_count`` and honours it (every store of threadline
            does). A store whose ``append`` predates it declares ``checks_append_count = False``: a conversation
            then calls it without the count, and the lease alone keeps other writers out. A store that declares
            nothing and does not take it is refused by `append_checked` with a `StoreError` saying so.
    """

    url: str
    checks_append_count: ClassVar[bool] = True

    @abstractmethod
    def create_conversation(
        self, title: str | None = None, metadata: Mapping[str, Any] | None = None, *, id: str | None = None
    ) -> ConversationInfo:
        """Create a conversation (with ``id`` if given; raises `StoreError` if it exists)."""

    @abstractmethod
    def get_conversation(self, conversation_id: str) -> ConversationInfo:
        """Metadata of one conversation, ``message_count`` up to date. Raises `StoreError` if there is none with that
        id."""

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
    def load(self, conversation_id: str) -> MessageList:
        """The whole log, in the store's total order."""

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
        with the fork: they stay reachable while either conversation does (see
        `threadline.store.Store.delete_conversation`).

        Raises:
            StoreError: if there is no such conversation or message, or ``id`` is taken.
        """

    def has_conversation(self, conversation_id: str) -> bool:
        """Whether a conversation with that id exists (this default asks `get_conversation`)."""
        try:
            self.get_conversation(conversation_id)
        except StoreError:
            return False
        return True

    def try_lease(self, conversation_id: str) -> Lease | None:
        """Take the conversation's writer lease if no other writer holds it; never waits (None when another holds
        it). This default excludes writers of this process only (one table per store object)."""
        from .leases import local_leases

        return local_leases(self).try_lease(conversation_id)

    def append_checked(self, conversation_id: str, messages: Sequence[Message], expected_count: int) -> None:
        """Append as a writer whose view of the log is ``expected_count`` messages long, and who has checked each
        message's fields (`threadline.message_fields.field_problem`): `append` with the count when this store checks
        it (`checks_append_count`), without it when the store declares it does not.

        Raises:
            StoreError: if the store claims the count (the default) but its ``append`` does not take it (nothing
                was appended); or as `append`.
            ConversationBusy: as `append`.
        """
        if not self.checks_append_count:
            self.append(conversation_id, messages)
            return
        try:
            self.append(conversation_id, messages, expected_count=expected_count)
        except TypeError as exc:
            if "unexpected keyword argument 'expected_count'" not in str(exc):
                raise
            kind = type(self).__name__
            raise StoreError(
                f"{kind}.append does not take expected_count, which every Store's append takes (it refuses a write "
                f"when another writer appended without the lease): add it, or declare checks_append_count = False on "
                f"{kind} to be written to with the lease alone (nothing was appended)"
            ) from None


@runtime_checkable
class BrowsableStore(Protocol):
    """What the viewer and the command line need to list, search and page through conversations (each method's
    docstring is its contract)."""

    @abstractmethod
    def list_conversations(self, limit: int = 50, offset: int = 0) -> list[ConversationInfo]:
        """Conversations, most recently updated first."""

    @abstractmethod
    def list_summaries(self, limit: int = 50, offset: int = 0) -> list[ConversationSummary]:
        """Conversations, most recently active first, with the figures a list shows (model, failures, fork)."""

    @abstractmethod
    def search_conversations(self, query: str, limit: int = 50, offset: int = 0) -> list[ConversationSummary]:
        """Conversations whose title or one of whose messages holds every word of ``query`` (words match as
        prefixes, case-insensitively), most recently active first. A match in a message sets ``match_id`` and
        ``snippet``. A query with no words matches nothing.
        """

    @abstractmethod
    def list_forks(self, conversation_id: str) -> list[ConversationInfo]:
        """The conversations forked from this one, oldest first (``metadata["forked_from"]["message"]`` says
        where each one left it)."""

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

    @abstractmethod
    def message_position(self, conversation_id: str, message_id: str) -> int:
        """Where a message stands in its log: 1 for the first message, ``n`` for the ``n``-th.

        Raises:
            StoreError: if the conversation has no message with that id.
        """

    @abstractmethod
    def search_messages(self, conversation_id: str, query: str, limit: int = 10_000) -> list[tuple[int, str]]:
        """The messages of one conversation that hold every word of ``query`` (as `search_conversations` matches
        them), in log order, as ``(sequence number, message id)`` pairs; at most ``limit`` of them, the oldest first.

        Raises:
            StoreError: if there is no conversation with that id.
        """


@runtime_checkable
class ArtifactStore(Protocol):
    """What artifacts need: large tool outputs saved per conversation, read back in parts."""

    @abstractmethod
    def save_artifact(self, conversation_id: str, name: str, content: str) -> str:
        """Save (or replace) a text artifact; returns its URI ``artifact://<conversation>/<name>``."""

    @abstractmethod
    def read_artifact(self, conversation_id: str, name: str, offset: int = 0, limit: int | None = None) -> str:
        """Read ``limit`` characters from ``offset``. Raises `StoreError` if it does not exist."""


@runtime_checkable
class CacheStore(Protocol):
    """What ``generate_text(cache=...)``'s request cache (and a conversation's context summaries) need: JSON values
    by key."""

    @abstractmethod
    def cache_get(self, key: str) -> Any | None:
        """A cached JSON value, or None.

        Raises:
            StoreError: if the stored value is damaged (not JSON).
        """

    @abstractmethod
    def cache_put(self, key: str, value: Any) -> None:
        """Cache a JSON-serializable value under a key (replacing any)."""

    def cache_get_raw(self, key: str) -> bytes | None:
        """A cached value as JSON bytes, or None. This default re-encodes `cache_get`'s value."""
        import msgspec

        value = self.cache_get(key)
        return None if value is None else msgspec.json.encode(value)


@runtime_checkable
class PageStore(Protocol):
    """What generated pages need: ``toolboxes.Pages`` saves them, the viewer shows them, ``threadline logs`` lists
    them."""

    url: str

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


def missing_methods(store: object, capability: type) -> list[str]:
    """The members of ``capability`` (one of the protocols above) that ``store`` lacks, in their declared order
    (``checks_append_count``, which has a default, is never missing)."""
    names: dict[str, None] = {}
    for klass in reversed(capability.__mro__):
        if not getattr(klass, "_is_protocol", False) or klass is Protocol:
            continue
        for name in [*inspect.get_annotations(klass), *klass.__dict__]:
            if not name.startswith("_") and name != "checks_append_count":
                names[name] = None
    return [name for name in names if not hasattr(store, name)]


def require(store: object, *capabilities: type, who: str) -> None:
    """Refuse a store that lacks one of ``capabilities``.

    Args:
        store: What was handed over as a store.
        capabilities: The protocols the user needs (`ConversationStore`, `BrowsableStore`, …).
        who: Who needs them, with its verb, as the error begins (``"the viewer needs"``, ``"cache= takes"``).

    Raises:
        UserError: naming each missing capability and the methods it lacks.
    """
    lacking = [(capability, missing_methods(store, capability)) for capability in capabilities]
    lacking = [(capability, missing) for capability, missing in lacking if missing]
    if not lacking:
        return
    parts = "; ".join(f"{capability.__name__} (no {', '.join(missing)})" for capability, missing in lacking)
    needed = ", ".join(capability.__name__ for capability in capabilities)
    raise UserError(
        f"{who} a store that is a {needed} (threadline.store), and {type(store).__name__} lacks {parts}: use a "
        "store of threadline.open_store(...), or add those methods (a subclass of a protocol inherits the ones it has "
        "defaults for)"
    )
