"""`Conversation`: owns a `MessageList` and a `ConversationConfig`, runs turns, persists what they produce.

Iterating a conversation (``async for message in conversation``) runs one turn with the settings it was armed with
(`PromptBuilder.prompt_conversation`) and yields each new message as it is recorded. ``conversation.continuation``
returns a builder that refers to this same conversation.

A conversation is the engine's `TurnHost` (`threadline.engine`): the engine reads its log, records into it, and asks
it for the model, the tools and the context of each request. Recording writes through: the store first, then the
log in memory, so the two never diverge. One turn runs at a time (`acquire`, `hold`; the lock is
`threadline.turn_lock`). How the context of each request is built, and the artifacts it refers to, is
`threadline.conversation_context`.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from types import EllipsisType
from typing import TYPE_CHECKING, Any

import msgspec

from ._ids import new_id
from ._log_index import LogIndex
from ._tool_scope import refuse_own_tool
from .conversation_config import (
    CONFIG_FIELDS,
    ConversationConfig,
    check_settings,
    config_problem,
    own_config,
    own_value,
    reasoning_settings,
)
from .conversation_context import ConversationContext
from .engine import TurnOptions, TurnResult, pending_calls_before, plan_turn, repair_pending, run_turn
from .engine.plan import CheckedSettings, mode_meta
from .errors import StoreError, UserError
from .mentions import Mentions
from .message_fields import field_problem
from .messages import MODES, AssistantMessage, Message, MessageList, MessageMeta, ToolMessage, UserMessage
from .models.base import Model
from .tools import ResolvedTools, resolve_tools
from .turn_lock import TurnHold, TurnLock

if TYPE_CHECKING:
    from .builder import PromptBuilder
    from .store.base import Store

__all__ = ["Conversation", "ConversationConfig", "TurnHold", "check_settings"]


class Conversation(ConversationContext):
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
        self._next_turn_settings = CheckedSettings()  # what `arm` set; the next turn uses them up
        self._mentions = Mentions()
        self._index: LogIndex | None = None
        self._lock: TurnLock | None = None  # made on first use (`_turn_lock`)
        self._init_context()
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
            self._mentions.note(message)
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
            stored = Conversation.load(info.id, self.store, config)
            stored._mentions.objects.update(self._mentions.objects)  # the objects @-mentioned so far, as below
            return stored
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
        forked._mentions.objects.update(self._mentions.objects)
        return forked

    @property
    def continuation(self) -> PromptBuilder:
        """A fresh builder that refers to this conversation."""
        from .builder import PromptBuilder

        return PromptBuilder(conversation=self)

    def apply_config_deltas(self, deltas: Mapping[str, Any]) -> None:
        """Set config fields (lists and dicts are copied, so the caller's objects never change the config later).

        Raises:
            ValueError: for an unknown key, or a value the field cannot take (nothing is changed then).
        """
        unknown = [key for key in deltas if key not in CONFIG_FIELDS]
        if unknown:
            raise ValueError(f"Unknown config key: {', '.join(map(repr, unknown))}")
        if "mode" in deltas and deltas["mode"] is not None and deltas["mode"] not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {deltas['mode']!r}")
        if "reasoning" in deltas:
            deltas = {**deltas, "reasoning": reasoning_settings(deltas["reasoning"])}
        for key, value in deltas.items():
            problem = config_problem(key, value)
            if problem is not None:
                raise ValueError(problem)  # nothing is changed then
        for key, value in deltas.items():
            setattr(self.config, key, own_value(value))
        if "mode" in deltas and self.store is not None and deltas["mode"] is not None:
            self._ensure_stored()
            self.store.update_metadata(self.id, active_mode=deltas["mode"])

    def attach(self, ref: str, obj: Any) -> None:
        """Bind a live object to a mention ``ref`` (e.g. after a reload); its tools are offered from now on."""
        self._mentions.attach(ref, obj)

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
        self._move_artifacts_to(store)

    # -- the log ----------------------------------------------------------------------------------------------
    def add(self, *messages: Message) -> None:
        """Append messages to the log (and the store), each as `record` does.

        Calls a crash left unanswered are answered ``interrupted`` first, so the log stays valid.

        Raises:
            ConversationBusy: if a turn is running on this conversation and this call cannot wait for it (inside a
                running event loop, or inside a tool that turn is running), or it did not end within
                ``config.busy_timeout``.
            UserError: for a message whose id is already in the log.
            StoreError: if the store failed (the messages before are kept; this one and later ones are not).
        """
        lock = self._turn_lock()
        previous = lock.enter_sync(self, ..., None, self._catch_up)
        try:
            for message in messages:
                self.record(message)
        finally:
            lock.leave(keep_reserved=previous == "armed")  # a reservation made before stays

    def record(self, message: Message) -> None:
        """Keep one new message: persist it first (when there is a store), then append it to the log.

        This is the engine's sink (`TurnHost.record`); it does not wait for other turns, so call it while this
        conversation's turn is yours (a running turn, or `hold`); elsewhere use `add`. A user or assistant message
        that would follow calls a crash left unanswered is preceded by their ``interrupted`` results.

        Raises:
            UserError: for a message whose id is already in the log, or with a field of the wrong type
                (``UserMessage(content=123)``), which no store could read back (nothing is recorded).
            StoreError: if the store failed; nothing was appended in memory either, so log and store stay equal.
            ConversationBusy: if the store holds messages this conversation has not seen (another writer appended
                without the lease); or if called from inside a tool this conversation's running turn is running
                (its call is not answered yet); nothing was recorded.
        """
        refuse_own_tool(self)
        problem = field_problem(message)
        if problem is not None:
            raise UserError(f"this {type(message).__name__} cannot be recorded: {problem} (nothing was recorded)")
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
            store.append_checked(self.id, (message,), self._stored)
            self._stored += 1
        messages.append(message)
        index.add(message)
        if kind is UserMessage:
            self._mentions.note(message)
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
    ) -> TurnHold[Conversation]:
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
        return TurnHold(self, self._turn_lock(), self._catch_up, max_wait, on_wait, reserve)

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
        self._turn_lock().release_reservation()

    def _turn_lock(self) -> TurnLock:
        lock = self._lock
        if lock is None:
            with _lock_creation:  # two threads must not make two locks
                lock = self._lock
                if lock is None:
                    lock = self._lock = TurnLock()
        return lock

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
            self._mentions.note(message)
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
        self._next_turn_settings = check_settings(settings)

    def message_meta(self) -> MessageMeta | None:
        """The meta new messages are tagged with: the conversation's mode (None when no mode is set)."""
        return mode_meta(self.config.mode)

    def turn_options(self, **overrides: Any) -> TurnOptions:
        """The options of the next turn: the config, the armed settings (used up by this call), then
        ``overrides`` (fields of `TurnOptions`)."""
        armed, self._next_turn_settings = self._next_turn_settings, CheckedSettings()
        return plan_turn(self.config, armed, **overrides)

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

    def run_sync(self, on_message: Callable[[Message], Any] | None = None, **overrides: Any) -> TurnResult:
        """`run` for synchronous code: run one turn with the armed settings and return how it ended.

        Ctrl-C cancels the turn: the model call in progress is logged as a failure of type ``interrupted`` with the
        text it had streamed, and only then is ``KeyboardInterrupt`` raised (a second Ctrl-C raises at once).

        Args:
            on_message: Called with each new message as it is recorded (tool calls, tool results, the answer).
            **overrides: Fields of `TurnOptions`, e.g. ``on_text=`` to see the answer's text as it streams.

        Raises:
            ConversationBusy: if another turn did not end within ``config.busy_timeout``.
            ModelError: when a model call failed (the failure is in the log first).
            KeyboardInterrupt: after Ctrl-C, once the turn has recorded where it stopped.
            RuntimeError: inside a running event loop (iterate `run` with ``async for`` there).
        """
        from ._sync import run_sync

        result = TurnResult()

        async def drive() -> None:
            async for message in self.run(result=result, **overrides):
                if on_message is not None:
                    on_message(message)

        run_sync(drive())
        return result

    def resolve_tools(self) -> ResolvedTools:
        """The tools of the next request: the config's (dynamic ones evaluated now) and those of mentioned objects."""
        resolved = resolve_tools(self.config.tools, self)
        self._mentions.add_tools(resolved, self)
        return resolved

    def __repr__(self) -> str:
        return f"<Conversation {self.id} ({len(self.messages)} messages)>"


class _TurnStart(TurnHold["Conversation"]):
    """The hold of a turn run by `Conversation.run`: it also makes the turn's result the conversation's
    ``last_turn`` once the turn has the conversation."""

    __slots__ = ("_result",)

    def __init__(self, conversation: Conversation, result: TurnResult) -> None:
        super().__init__(conversation, conversation._turn_lock(), conversation._catch_up, ..., None, False)
        self._result = result

    async def __aenter__(self) -> Conversation:
        conversation = await super().__aenter__()
        conversation.last_turn = self._result
        return conversation


_lock_creation = threading.Lock()
