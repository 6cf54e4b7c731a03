"""`Conversation`: owns a `MessageList` and a `ConversationConfig`, runs turns, persists what they produce.

Iterating a conversation (``async for message in conversation``) runs one turn with the settings it was armed with
(`PromptBuilder.prompt_conversation`) and yields each new message as it is recorded. ``conversation.continuation``
returns a builder that refers to this same conversation.

A conversation is the engine's `TurnHost` (`threadline.engine`): the engine reads its log, records into it, and asks
it for the model, the tools and the context of each request. Recording writes through: the store first, then the
log in memory, so the two never diverge. One turn runs at a time (`acquire`, `hold`; `threadline._turn_gate`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from types import EllipsisType
from typing import TYPE_CHECKING, Any

import msgspec

from ._artifact_names import artifact_uri
from ._ids import new_id
from ._log_index import LogIndex
from ._summary import summary_of_span
from ._turn_gate import GateState, Lease, TurnGate, wait_for_lease, wait_for_lease_async
from .context import BuiltContext, ContextBuilder, ContextSettings
from .conversation_config import CONFIG_FIELDS, ConversationConfig, check_settings, own_config, own_value
from .engine import TurnOptions, TurnResult, pending_calls_before, repair_pending, run_turn
from .errors import ConversationBusy, StoreError, UserError
from .messages import MODES, AssistantMessage, Message, MessageList, MessageMeta, ToolMessage, UserMessage
from .models.base import Model, ModelSettings
from .tools import ResolvedTools, Tool, Toolset, resolve_tools

if TYPE_CHECKING:
    from .builder import PromptBuilder
    from .store.base import Store

_default_context = ContextBuilder()

__all__ = ["Conversation", "ConversationConfig", "TurnHold", "check_settings"]


class Conversation:
    """A conversation: its log, its config, and optionally a store that keeps every message as it happens.

    It is the `TurnHost` of the engine (`threadline.engine`): turns read its log and record into it.

    One turn runs at a time (see "One turn at a time" in the README): a second turn waits until the first has
    ended — in this process, and in other processes and hosts sharing the store, through the store's lease on the
    conversation — for at most ``config.busy_timeout`` seconds, then raises `ConversationBusy`.

    Args:
        messages: The log to start from (a `MessageList` is used as is, not copied).
        config: How turns run (copied: changes to this conversation never reach another one given the same config).
        store: Persist every message here the moment it exists.
        id: The conversation id (a new one by default). With a store that already has this id and no ``messages``,
            the stored log is loaded.
    """

    def __init__(
        self,
        messages: MessageList | Iterable[Message] | None = None,
        config: ConversationConfig | None = None,
        *,
        store: Store | None = None,
        id: str | None = None,
    ) -> None:
        self.config = own_config(config) if config is not None else ConversationConfig()
        self.id: str = id or new_id()
        self.store = store
        self.last_turn: TurnResult | None = None
        self._armed: dict[str, Any] = {}
        self._attached: dict[str, Any] = {}
        self._mentions: dict[str, None] = {}
        self._mention_tools: dict[str, tuple[Any, Toolset]] = {}
        self._artifacts: dict[str, str] = {}
        self._saved_artifacts: set[str] = set()
        self._artifact_tool: Tool | None = None
        self._memory_cache: dict[str, Any] = {}
        self._index: LogIndex | None = None
        self._window_cache: dict[Any, Any] = {}
        self._gate: TurnGate | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._stored = 0  # how many messages of the log the store holds (memory is a prefix of the store)
        self._in_store = False
        self._untitled = False  # stored without a title yet: the first user message names it
        if store is not None and id is not None and store.has_conversation(id):
            if messages is not None:
                raise UserError(
                    f"conversation {id!r} already exists in the store; use Conversation.load({id!r}, store) "
                    "to continue it"
                )
            messages = store.load(id)
            info = store.get_conversation(id)
            if info.active_mode and self.config.mode is None:
                self.config.mode = info.active_mode
            self._in_store = True
        if isinstance(messages, MessageList):
            self.messages = messages
        else:
            self.messages = MessageList(messages or ())
        for message in self.messages:
            self._note_mentions(message)
        if self._in_store:
            self._stored = len(self.messages)
        elif store is not None and len(self.messages):
            self._ensure_stored()
            store.append(self.id, list(self.messages))
            self._stored = len(self.messages)

    # -- construction -----------------------------------------------------------------------------------------
    @classmethod
    def load(cls, id: str, store: Store, config: ConversationConfig | None = None) -> Conversation:
        """Restore a stored conversation (its log and its active mode).

        Raises:
            StoreError: if the store has no conversation with that id.
        """
        if not store.has_conversation(id):
            raise StoreError(f"no conversation {id!r} in {store.url}")
        return cls(config=config, store=store, id=id)

    def fork(self, at: str | None = None, *, title: str | None = None) -> Conversation:
        """A new conversation whose log is a copy of this one up to message ``at`` (the whole log when None), to try
        another model or another question without touching this one. When ``at`` made tool calls (or is one of
        their results), the copy keeps the rest of that tool group. The fork gets a copy of this config.

        With a store, the fork is stored (`Store.fork_conversation`) and recorded there as forked from
        ``<this id>@<at>`` (``metadata["forked_from"]``).

        Raises:
            UserError: without a store, if the log has no message ``at``.
            StoreError: with a store, if the stored log has no message ``at``.
        """
        config = msgspec.structs.replace(self.config, tools=list(self.config.tools), extras=dict(self.config.extras))
        if self.store is not None:
            if at is None:
                if not len(self.messages):
                    raise UserError("an empty conversation has nothing to fork")
                at = self.messages[-1].id
            self._ensure_stored()
            info = self.store.fork_conversation(self.id, at, title=title)
            return Conversation.load(info.id, self.store, config)
        items = list(self.messages)
        if at is None:
            cut = len(items)
        else:
            index = next((i for i, message in enumerate(items) if message.id == at), None)
            if index is None:
                raise UserError(f"no message {at!r} in conversation {self.id}")
            cut = index + 1
            # The rest of the tool group: a fork never ends with calls answered by half.
            while cut < len(items) and type(items[cut]) is ToolMessage:
                cut += 1
        forked = Conversation(MessageList(items[:cut]), config)
        forked._attached.update(self._attached)
        return forked

    @property
    def continuation(self) -> PromptBuilder:
        """A fresh builder that refers to this conversation."""
        from .builder import PromptBuilder

        return PromptBuilder(conversation=self)

    def apply_config_deltas(self, deltas: Mapping[str, Any]) -> None:
        """Set config fields (lists and dicts are copied, so the caller's objects never change the config later).

        Raises:
            ValueError: for an unknown key (nothing is changed then).
        """
        unknown = [key for key in deltas if key not in CONFIG_FIELDS]
        if unknown:
            raise ValueError(f"Unknown config key: {', '.join(map(repr, unknown))}")
        if "mode" in deltas and deltas["mode"] is not None and deltas["mode"] not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {deltas['mode']!r}")
        for key, value in deltas.items():
            setattr(self.config, key, own_value(value))
        if "mode" in deltas and self.store is not None and deltas["mode"] is not None:
            self._ensure_stored()
            self.store.update_metadata(self.id, active_mode=deltas["mode"])

    def attach(self, ref: str, obj: Any) -> None:
        """Bind a live object to a mention ``ref`` (e.g. after a reload); its tools are offered from now on."""
        self._attached[ref] = obj
        self._mentions.setdefault(ref, None)
        self._mention_tools.pop(ref, None)  # the tools made for the object it replaces would keep that object alive

    def set_store(self, store: Store) -> None:
        """Keep this conversation in ``store`` from now on: its log so far is written there at once.

        Raises:
            UserError: if it is already kept in another store.
        """
        if store is self.store:
            return
        if self.store is not None:
            raise UserError("this conversation is already kept in another store")
        self.store = store
        if len(self.messages):
            self._ensure_stored()
            store.append(self.id, list(self.messages))
            self._stored = len(self.messages)

    # -- the log ----------------------------------------------------------------------------------------------
    def add(self, *messages: Message) -> None:
        """Append messages to the log (and the store), each as `record` does.

        Calls a crash left unanswered are answered ``interrupted`` first, so the log stays valid.

        Raises:
            ConversationBusy: if a turn is running on this conversation and this call cannot wait for it (inside a
                running event loop), or it did not end within ``config.busy_timeout``.
            UserError: for a message whose id is already in the log.
            StoreError: if the store failed (the messages before are kept; this one and later ones are not).
        """
        previous = self._enter_sync(..., None)
        try:
            for message in messages:
                self.record(message)
        finally:
            self._turn_gate().release("armed" if previous == "armed" else "free")

    def record(self, message: Message) -> None:
        """Keep one new message: persist it first (when there is a store), then append it to the log.

        This is the engine's sink (`TurnHost.record`); it does not wait for other turns, so call it while this
        conversation's turn is yours (a running turn, or `hold`); elsewhere use `add`. A user or assistant message
        that would follow calls a crash left unanswered is preceded by their ``interrupted`` results.

        Raises:
            UserError: for a message whose id is already in the log (nothing is recorded).
            StoreError: if the store failed; nothing was appended in memory either, so log and store stay equal.
            ConversationBusy: if the store holds messages this conversation has not seen (another writer appended
                without the lease); nothing was recorded.
        """
        messages = self.messages
        index = self._index
        if index is None or index.upto != len(messages):
            index = self._log_index()
        if message.id in index.ids:
            raise UserError(
                f"message {message.id!r} is already in the log of conversation {self.id}; a message is recorded "
                "once (to repeat one, copy it with a new id)"
            )
        kind = type(message)
        if index.open and (kind is UserMessage or kind is AssistantMessage):
            # A user or assistant message may not follow unanswered calls: answer them first.
            repair_pending(self, self.message_meta(), pending_calls_before(messages, message))
        store = self.store
        if store is not None:
            self._ensure_stored()
            if _checks_count(store):
                store.append(self.id, (message,), expected_count=self._stored)
            else:
                store.append(self.id, (message,))
            self._stored += 1
        messages.append(message)
        index.add(message)
        if kind is UserMessage:
            self._note_mentions(message)
            if store is not None and self._untitled and message.content.strip():  # type: ignore[union-attr]
                # The row was made before any user message (e.g. to keep the mode): title it now.
                store.update_metadata(self.id, title=self._title())
                self._untitled = False

    def known_call_ids(self) -> set[str]:
        """Every tool-call id in the log (kept up to date as messages are recorded)."""
        index = self._index
        if index is None or index.upto != len(self.messages):
            index = self._log_index()
        return index.call_ids

    def _log_index(self) -> LogIndex:
        index = self._index
        if index is None:
            index = self._index = LogIndex()
        if index.upto != len(self.messages):
            index.sync(self.messages)
        return index

    def _ensure_stored(self) -> None:
        if self._in_store or self.store is None:
            return
        if not self.store.has_conversation(self.id):
            title = self._title()
            self.store.create_conversation(title=title, id=self.id)
            self._untitled = title is None
            if self.config.mode is not None:
                self.store.update_metadata(self.id, active_mode=self.config.mode)
        self._stored = 0
        self._in_store = True

    def _title(self) -> str | None:
        for message in self.messages:
            if type(message) is UserMessage and message.content.strip():
                text = " ".join(message.content.split())
                return text if len(text) <= 80 else text[:79] + "…"
        return None

    def _note_mentions(self, message: Message) -> None:
        if type(message) is UserMessage and message.attachments:
            for attachment in message.attachments:
                if attachment.kind == "mention" and attachment.ref:
                    self._mentions.setdefault(attachment.ref, None)
                    if attachment.object is not None:
                        self._attached[attachment.ref] = attachment.object

    @property
    def text(self) -> str | None:
        """The content of the last assistant message."""
        for message in reversed(self.messages):
            if type(message) is AssistantMessage:
                return message.content
        return None

    # -- one turn at a time -----------------------------------------------------------------------------------
    def hold(
        self,
        max_wait: float | EllipsisType | None = ...,
        on_wait: Callable[[], Any] | None = None,
        *,
        reserve: bool = False,
    ) -> TurnHold:
        """Hold this conversation for a block of work: ``with conversation.hold(): …`` or ``async with …``.

        Inside the block no other turn, `add` or writer of another process gets in: record with `record` and run
        turns with `threadline.engine.run_turn` (a run of several nodes, a turn retried with feedback, messages
        applied and then answered). A turn holding the conversation is waited for first; a reservation
        (``prompt_conversation``, `acquire`) is taken over.

        Args:
            max_wait: Seconds to wait for another turn (default ``config.busy_timeout``; None: as long as it takes).
            on_wait: Called once, before waiting, if the conversation is held (e.g. to say "waiting…").
            reserve: Keep the conversation reserved for its next turn when the block ends without an error (what
                ``prompt_conversation`` does), instead of freeing it.

        Raises:
            ConversationBusy: if the wait ran out, or ``with`` was used inside a running event loop and would have
                had to wait (use ``async with`` there).
        """
        return TurnHold(self, max_wait, on_wait, reserve)

    def acquire(self, max_wait: float | EllipsisType | None = ..., on_wait: Callable[[], Any] | None = None) -> None:
        """Reserve this conversation for its next turn, waiting (in this thread) while another turn holds it.

        The reservation — in this process, and through the store's lease in every other one — lasts until that
        turn ends, or until `release`. ``prompt_conversation`` reserves the same way; call this first to wait
        visibly (``on_wait``) or with another bound.

        Args:
            max_wait: Seconds to wait (default ``config.busy_timeout``; None waits as long as it takes).
            on_wait: Called once if the conversation is held elsewhere, before waiting (e.g. to print "waiting…").

        Raises:
            ConversationBusy: if the time ran out, or this was called inside a running event loop and would have had
                to wait (use `acquire_async` there).
        """
        with self.hold(max_wait, on_wait, reserve=True):
            pass

    async def acquire_async(
        self, max_wait: float | EllipsisType | None = ..., on_wait: Callable[[], Any] | None = None
    ) -> None:
        """`acquire` for async code: waits without blocking the event loop."""
        async with self.hold(max_wait, on_wait, reserve=True):
            pass

    def release(self) -> None:
        """Give up a reservation (`acquire`, ``prompt_conversation``) whose turn will not run. Does nothing while a
        turn runs, or when nothing is reserved."""
        gate = self._turn_gate()
        if gate.state == "armed" and gate.try_claim() is not None:
            gate.release("free")

    def _turn_gate(self) -> TurnGate:
        gate = self._gate
        if gate is None:
            with _gate_lock:  # two threads must not make two gates
                gate = self._gate
                if gate is None:
                    gate = self._gate = TurnGate()
        return gate

    def _timeout(self, max_wait: float | EllipsisType | None) -> float | None:
        return self.config.busy_timeout if isinstance(max_wait, EllipsisType) else max_wait

    def _enter_sync(self, max_wait: float | EllipsisType | None, on_wait: Callable[[], Any] | None) -> GateState:
        """Hold the gate (and the store's lease) from synchronous code; returns the gate's previous state."""
        from ._sync import in_event_loop

        gate = self._turn_gate()
        seconds = self._timeout(max_wait)
        previous = gate.try_claim()
        if previous is None:
            if in_event_loop():
                raise ConversationBusy(
                    f"conversation {self.id} is running a turn; a synchronous call inside an event loop cannot wait "
                    "for it (await the turn, or use prompt_async()/acquire_async(), which wait)"
                )
            previous = gate.claim(seconds, f"conversation {self.id}", on_wait)
            on_wait = None  # said once
        try:
            if self.store is not None and gate.lease is None:
                store = self.store
                what = f"conversation {self.id}"
                lease: Lease | None
                if in_event_loop():
                    lease = store.try_lease(self.id)
                    if lease is None:
                        raise ConversationBusy(
                            f"{what} is held by another writer; a synchronous call inside an event loop cannot wait "
                            "for it (use acquire_async() or prompt_async(), which wait)"
                        )
                else:
                    lease = wait_for_lease(lambda: store.try_lease(self.id), what, seconds, on_wait)
                self._adopt_lease(lease)
        except BaseException:
            gate.release("armed" if previous == "armed" else "free")
            raise
        return previous

    async def _enter_async(self, max_wait: float | EllipsisType | None, on_wait: Callable[[], Any] | None) -> GateState:
        """Hold the gate (and the store's lease) from async code; returns the gate's previous state."""
        gate = self._turn_gate()
        seconds = self._timeout(max_wait)
        previous = await gate.claim_async(seconds, f"conversation {self.id}", on_wait)
        try:
            if self.store is not None and gate.lease is None:
                store = self.store
                said = previous == "busy"  # handed over by a turn this caller waited for: it was told already
                lease = await wait_for_lease_async(
                    lambda: store.try_lease(self.id), f"conversation {self.id}", seconds, None if said else on_wait
                )
                self._adopt_lease(lease)
        except BaseException:
            gate.release("armed" if previous == "armed" else "free")
            raise
        return previous

    def _leave(self, previous: GateState, reserve: bool, failed: bool) -> None:
        """Stop holding the gate: reserved for the next turn (a reservation that succeeded, or one that was there
        before a block that failed), else free."""
        keep = reserve and (not failed or previous == "armed")
        self._turn_gate().release("armed" if keep else "free")

    def _adopt_lease(self, lease: Lease) -> None:
        """Keep a fresh lease with the gate, then read what other writers appended since this log was loaded."""
        gate = self._turn_gate()
        gate.lease = lease
        if self._finalizer is None:
            # A conversation dropped while it holds a lease (armed, never run) must not keep other writers out.
            self._finalizer = weakref.finalize(self, _drop_lease, gate)
        self._catch_up()

    def _catch_up(self) -> None:
        """Append to the log what other writers stored while this conversation did not hold the lease (memory is
        a prefix of the store: writes go to the store first)."""
        store = self.store
        if store is None or not self._in_store:
            return
        count = store.get_conversation(self.id).message_count
        if count == self._stored:
            return
        stored = store.load(self.id)
        known = self._stored
        if len(stored) < known or (
            known and (known > len(self.messages) or stored[known - 1].id != self.messages[known - 1].id)
        ):
            raise StoreError(
                f"the stored log of conversation {self.id} no longer begins with the messages this object holds; "
                "load it again with Conversation.load"
            )
        for message in stored[known:]:
            self.messages.append(message)
            self._note_mentions(message)
        self._stored = len(stored)

    # -- turns ------------------------------------------------------------------------------------------------
    def resolve_model(self) -> Model:
        """The model the next turn uses."""
        from .models import DEFAULT_MODELS, get_model

        config = self.config
        if config.model is not None:
            return get_model(config.model)
        if config.provider is not None:
            if config.provider not in DEFAULT_MODELS:
                raise UserError(
                    f"unknown provider {config.provider!r}: use one of {', '.join(DEFAULT_MODELS)} or .model(...)"
                )
            return get_model(DEFAULT_MODELS[config.provider])
        return get_model(None)

    def arm(self, **settings: Any) -> None:
        """Settings (``stream``, ``max_tokens``, ``temperature``, ``timeout``, ``max_retries``, ``tool_timeout``,
        provider-prefixed extras) for the next turn only, over the config's.

        Raises:
            UserError: for an unknown setting.
        """
        self._armed = check_settings(settings)

    def message_meta(self) -> MessageMeta | None:
        """The meta new messages are tagged with: the conversation's mode (None when no mode is set)."""
        mode = self.config.mode
        return MessageMeta(mode=mode) if mode in MODES else None

    def turn_options(self, **overrides: Any) -> TurnOptions:
        """The options of the next turn: the config, the armed settings (used up by this call), then
        ``overrides`` (fields of `TurnOptions`)."""
        config = self.config
        armed, self._armed = self._armed, {}
        extras = dict(config.extras)
        extras.update(armed.get("extras", {}))
        settings = ModelSettings(
            stream=armed.get("stream", config.stream),
            max_tokens=armed.get("max_tokens", config.max_tokens),
            temperature=armed.get("temperature", config.temperature),
            timeout=armed.get("timeout", config.timeout),
            max_retries=armed.get("max_retries", config.max_retries),
            extras=extras,
        )
        options = TurnOptions(
            settings=settings,
            tool_choice=config.tool_choice,
            max_tool_rounds=config.max_tool_rounds,
            tool_timeout=armed.get("tool_timeout", config.tool_timeout),
            meta=self.message_meta(),
        )
        for key, value in overrides.items():
            setattr(options, key, value)
        return options

    def run(self, *, result: TurnResult | None = None, **overrides: Any) -> AsyncIterator[Message]:
        """Run one turn with the armed settings (plus `TurnOptions` overrides); yields each new message.

        The turn waits while another turn holds the conversation (see `acquire`).

        Args:
            result: Filled in as the turn goes (it is also `last_turn` once the turn starts).
            **overrides: Fields of `TurnOptions`.

        Raises:
            ConversationBusy: if another turn did not end within ``config.busy_timeout``.
        """
        result = result if result is not None else TurnResult()
        # The turn holds the conversation from its first step to its end (run_turn enters the hold).
        return run_turn(self, self.turn_options(**overrides), result, hold=_TurnStart(self, result))

    def __aiter__(self) -> AsyncIterator[Message]:
        return self.run()

    def resolve_tools(self) -> ResolvedTools:
        """The tools of the next request: the config's (dynamic ones evaluated now) and those of mentioned objects."""
        resolved = resolve_tools(self.config.tools, self)
        for ref in self._mentions:
            obj = self._attached.get(ref)
            if obj is None:
                continue
            cached = self._mention_tools.get(ref)
            if cached is None or cached[0] is not obj:
                toolset = Toolset.from_object(obj)
                if any(name in resolved.tools for name in toolset.names()):
                    toolset = Toolset.from_object(obj, name=ref)
                cached = (obj, toolset)
                self._mention_tools[ref] = cached
            resolved.add(cached[1], self)
        return resolved

    def _context_builder(self) -> ContextBuilder:
        context = self.config.context
        if context is None:
            return _default_context
        if isinstance(context, ContextSettings):
            builder = ContextBuilder(settings=context)
            self.config.context = builder
            return builder
        return context

    def build_context(self, mode: str | None = None, run_context: Any = None) -> BuiltContext:
        """The request the next turn would send (without a summary note), and its report; changes nothing but
        saving large tool outputs as artifacts. Used by ``threadline logs show ID --context``."""
        return self._build(self.resolve_tools(), mode or self.config.mode, run_context, cache=None)

    def _build(
        self, tools: ResolvedTools, mode: str | None, run_context: Any, cache: dict[Any, Any] | None
    ) -> BuiltContext:
        builder = self._context_builder()
        counter = None
        if builder.settings.max_tokens is not None and builder.settings.token_counter is None:
            counter = getattr(self.resolve_model(), "count_tokens", None)
        return builder.build(
            self.messages,
            mode,
            self.config.persona,
            run_context,
            tools,
            artifacts=self._save_artifact,
            conversation_id=self.id,
            token_counter=counter,
            cache=cache,
        )

    async def build_request_context(self, tools: ResolvedTools, run_context: Any = None) -> BuiltContext:
        """The messages of the next request (`TurnHost`): the context builder's window of the log, with a summary
        of what it dropped when a summarizer is configured."""
        builder = self._context_builder()
        built = self._build(tools, self.config.mode, run_context, self._window_cache)
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
        if self.store is not None:
            return self.store.cache_get(key)
        return self._memory_cache.get(key)

    def _cache_put(self, key: str, value: Any) -> None:
        if self.store is not None:
            self.store.cache_put(key, value)
        else:
            self._memory_cache[key] = value

    # -- artifacts --------------------------------------------------------------------------------------------
    def _save_artifact(self, name: str, content: str) -> str:
        if name not in self._saved_artifacts:
            if self.store is not None:
                self._ensure_stored()
                self.store.save_artifact(self.id, name, content)
            else:
                self._artifacts[name] = content
            self._saved_artifacts.add(name)
        return artifact_uri(self.id, name)

    def read_artifact(self, name: str, offset: int = 0, limit: int | None = None) -> str:
        """Read an artifact of this conversation (a full tool output saved by the context builder).

        Raises:
            StoreError: if there is no such artifact.
        """
        if offset < 0 or (limit is not None and limit < 0):
            raise ValueError("offset and limit must not be negative")
        if self.store is not None:
            return self.store.read_artifact(self.id, name, offset, limit)
        if name not in self._artifacts:
            raise StoreError(f"no artifact {name!r} in conversation {self.id}")
        text = self._artifacts[name]
        return text[offset:] if limit is None else text[offset : offset + limit]

    def artifact_reader(self) -> Tool:
        """The ``read_artifact`` tool bound to this conversation (`TurnHost`)."""
        if self._artifact_tool is None:
            from .toolboxes.artifacts import artifact_reader

            self._artifact_tool = artifact_reader(self)
        return self._artifact_tool

    def __repr__(self) -> str:
        return f"<Conversation {self.id} ({len(self.messages)} messages)>"


class TurnHold:
    """What `Conversation.hold` returns: a context manager for ``with`` (synchronous code) and ``async with``."""

    __slots__ = ("_conversation", "_max_wait", "_on_wait", "_previous", "_reserve")

    def __init__(
        self,
        conversation: Conversation,
        max_wait: float | EllipsisType | None,
        on_wait: Callable[[], Any] | None,
        reserve: bool,
    ) -> None:
        self._conversation = conversation
        self._max_wait = max_wait
        self._on_wait = on_wait
        self._reserve = reserve
        self._previous: GateState = "free"

    def __enter__(self) -> Conversation:
        self._previous = self._conversation._enter_sync(self._max_wait, self._on_wait)
        return self._conversation

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self._conversation._leave(self._previous, self._reserve, exc_type is not None)

    async def __aenter__(self) -> Conversation:
        self._previous = await self._conversation._enter_async(self._max_wait, self._on_wait)
        return self._conversation

    async def __aexit__(self, exc_type: object, *exc: object) -> None:
        self._conversation._leave(self._previous, self._reserve, exc_type is not None)


class _TurnStart(TurnHold):
    """The hold of a turn run by `Conversation.run`: it also makes the turn's result the conversation's
    ``last_turn`` once the turn has the conversation."""

    __slots__ = ("_result",)

    def __init__(self, conversation: Conversation, result: TurnResult) -> None:
        super().__init__(conversation, ..., None, False)
        self._result = result

    async def __aenter__(self) -> Conversation:
        conversation = await super().__aenter__()
        conversation.last_turn = self._result
        return conversation


_gate_lock = threading.Lock()
_count_checked: dict[type, bool] = {}


def _drop_lease(gate: TurnGate) -> None:
    """Release the lease of a conversation that was dropped while holding it (armed, never run)."""
    lease, gate.lease = gate.lease, None
    if lease is not None:
        lease.release()


def _checks_count(store: Store) -> bool:
    """Whether the store's ``append`` takes ``expected_count`` (stores written before it existed do not: they are
    called without it and rely on the lease alone)."""
    kind = type(store)
    known = _count_checked.get(kind)
    if known is None:
        import inspect

        parameters = inspect.signature(kind.append).parameters.values()
        known = _count_checked[kind] = any(
            p.name == "expected_count" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters
        )
    return known
