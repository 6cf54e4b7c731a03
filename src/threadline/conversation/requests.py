"""How a conversation assembles its requests: the context each one carries (from the context builder), and the
artifacts that context refers to.

`RequestAssembly` (formerly ``ConversationContext``, in ``threadline.conversation_context``) is a mixin of
`ConversationHost` (`threadline.conversation.host`): the context builder chosen by the config, the window cache
that keeps building cheap as the log grows, the summary of dropped messages (cached in the store, or in memory
without one), and the artifacts — full tool outputs the request carries only as previews — with the
``read_artifact`` tool that lets the model read them.

A store that is a `ConversationStore` only (no `CacheStore`, no `ArtifactStore`) keeps the conversation's log, and
its summaries and artifacts stay in memory as without a store: both are made again from the log when needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._artifact_names import artifact_uri
from ..context import BuiltContext, ContextBuilder, ContextSettings
from ..context._summary import summary_of_span
from ..errors import StoreError

if TYPE_CHECKING:
    from ..message_list import MessageList
    from ..models.base import Model
    from ..store.capabilities import ArtifactStore, CacheStore, ConversationStore
    from ..tools import ResolvedTools, Tool
    from .config import ConversationConfig

__all__ = ["RequestAssembly"]

_default_context = ContextBuilder()


class RequestAssembly:
    """Mixin of `ConversationHost`: the assembly of its requests (their context) and its artifacts (see the module
    docstring).

    It uses these members of the class it is mixed into: ``id``, ``messages`` and ``config``;
    ``resolve_model()`` and ``resolve_tools()``; and ``ensure_stored()``, which makes the conversation's row in
    the store before an artifact is saved there. Its own state is set by `_init_context`, and ``store`` (which the
    class it is mixed into sets) is its own property: setting it decides once what the store keeps besides the log.
    """

    id: str
    messages: MessageList
    config: ConversationConfig

    if TYPE_CHECKING:

        def resolve_model(self) -> Model: ...

        def resolve_tools(self) -> ResolvedTools: ...

        def ensure_stored(self) -> None: ...

    def _init_context(self) -> None:
        self._artifacts: dict[str, str] = {}  # artifacts of a conversation without a store
        self._saved_artifacts: set[str] = set()
        self._artifact_tool: Tool | None = None
        self._memory_cache: dict[str, Any] = {}  # summaries of a conversation without a store
        self._window_cache: dict[Any, Any] = {}

    @property
    def store(self) -> ConversationStore | None:
        """Where the conversation is kept (None: memory only)."""
        return self._store

    @store.setter
    def store(self, store: ConversationStore | None) -> None:
        # The capability checks (isinstance of a runtime-checkable protocol, a few microseconds each) run here,
        # once per store, instead of on every artifact and cache access.
        self._store = store
        self._artifact_keeper = _artifact_store(store)
        self._cache_keeper = _cache_store(store)

    def _context_builder(self) -> ContextBuilder:
        context = self.config.context
        if context is None:
            return _default_context
        if isinstance(context, ContextSettings):
            builder = ContextBuilder(settings=context)
            self.config.context = builder
            return builder
        return context

    def build_context(self, mode: str | None = None, run_brief: Any = None) -> BuiltContext:
        """The request the next turn would send (without a summary note), and its report; changes nothing but
        saving large tool outputs as artifacts. Used by ``threadline logs show ID --context``."""
        return self._build(self.resolve_tools(), mode or self.config.mode, run_brief, cache=None)

    def _build(
        self, tools: ResolvedTools, mode: str | None, run_brief: Any, cache: dict[Any, Any] | None
    ) -> BuiltContext:
        builder = self._context_builder()
        counter = None
        if builder.settings.max_tokens is not None and builder.settings.token_counter is None:
            counter = getattr(self.resolve_model(), "count_tokens", None)
        return builder.build(
            self.messages,
            mode,
            self.config.persona,
            run_brief,
            tools,
            artifacts=self._save_artifact,
            conversation_id=self.id,
            token_counter=counter,
            cache=cache,
        )

    async def build_request_context(self, tools: ResolvedTools, run_brief: Any = None) -> BuiltContext:
        """The messages of the next request (`TurnHost`): the context builder's window of the log, with a summary
        of what it dropped when a summarizer is configured."""
        builder = self._context_builder()
        built = self._build(tools, self.config.mode, run_brief, self._window_cache)
        if builder.settings.summarizer is not None:
            start, cut = built.report.dropped_span()
            if cut > start:
                summary = await summary_of_span(
                    self.messages, start, cut, self.id, builder.settings.summarizer, self._cache_get, self._cache_put
                )
                if summary:
                    builder.add_summary(built, summary)
        return built

    def _cache_get(self, key: str) -> Any:
        store = self._cache_keeper
        if store is not None:
            return store.cache_get(key)
        return self._memory_cache.get(key)

    def _cache_put(self, key: str, value: Any) -> None:
        store = self._cache_keeper
        if store is not None:
            store.cache_put(key, value)
        else:
            self._memory_cache[key] = value

    # -- artifacts --------------------------------------------------------------------------------------------
    def _save_artifact(self, name: str, content: str) -> str:
        if name not in self._saved_artifacts:
            store = self._artifact_keeper
            if store is not None:
                self.ensure_stored()
                store.save_artifact(self.id, name, content)
            else:
                self._artifacts[name] = content
            self._saved_artifacts.add(name)
        return artifact_uri(self.id, name)

    def _move_artifacts_to(self, store: ConversationStore) -> None:
        """Save the artifacts kept in memory so far in ``store``, which keeps this conversation from now on (the
        model was shown their URIs, and reads them from there); a store that keeps no artifacts leaves them here."""
        kept = _artifact_store(store)
        if kept is None:
            return
        for name, content in self._artifacts.items():
            kept.save_artifact(self.id, name, content)
        self._artifacts.clear()

    def read_artifact(self, name: str, offset: int = 0, limit: int | None = None) -> str:
        """Read an artifact of this conversation (a full tool output saved by the context builder).

        Raises:
            StoreError: if there is no such artifact.
        """
        if offset < 0 or (limit is not None and limit < 0):
            raise ValueError("offset and limit must not be negative")
        store = self._artifact_keeper
        if store is not None:
            return store.read_artifact(self.id, name, offset, limit)
        if name not in self._artifacts:
            raise StoreError(f"no artifact {name!r} in conversation {self.id}")
        text = self._artifacts[name]
        return text[offset:] if limit is None else text[offset : offset + limit]

    def artifact_reader(self) -> Tool:
        """The ``read_artifact`` tool bound to this conversation (`TurnHost`)."""
        if self._artifact_tool is None:
            from ..toolboxes.artifacts import artifact_reader

            self._artifact_tool = artifact_reader(self)
        return self._artifact_tool


def _artifact_store(store: ConversationStore | None) -> ArtifactStore | None:
    """``store`` if it keeps artifacts (None without a store, or for a store that keeps the log only)."""
    if store is None:
        return None
    from ..store.capabilities import ArtifactStore  # the store package loads when a store is used

    return store if isinstance(store, ArtifactStore) else None


def _cache_store(store: ConversationStore | None) -> CacheStore | None:
    """``store`` if it has a request cache (None without a store, or for a store that keeps the log only)."""
    if store is None:
        return None
    from ..store.capabilities import CacheStore

    return store if isinstance(store, CacheStore) else None
