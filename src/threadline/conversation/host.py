"""`ConversationHost`: what a `Conversation` is to the engine and to its turn lock.

Each `Conversation` has one host (``conversation.host``), which owns the conversation's state and its plumbing:

- the write-through: every new message goes to the store first, then to the log in memory, so the two never
  diverge; each message is checked once on its way (`record`), and calls a crash left unanswered are answered
  ``interrupted`` right there, on the same path, before a user or assistant message would follow them;
- the log index (ids, tool-call ids, unanswered calls) and the objects user messages mention;
- the model and the tools of each request, and the assembly of each request: its context and artifacts
  (`RequestAssembly`);
- the engine's protocol (`threadline.engine.TurnHost`) and the lock's (`threadline.conversation.lock.LockOwner`):
  one turn at a time, the store's lease, the catch-up with what other writers stored meanwhile;
- the start of every turn on the conversation (`turn`), the one place its ``last_turn`` is written.

The user's object (`threadline.conversation.conversation`) keeps what a user calls; callers that drive turns
themselves (the builder, runs, ``threadline logs``) use the host.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from types import EllipsisType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._ids import new_id
from ..engine import TurnOptions, TurnResult, interrupted_results, plan_turn, run_turn
from ..engine._tool_scope import refuse_own_tool
from ..engine.plan import CheckedSettings, mode_meta
from ..errors import AwaitingDecision, StoreError, UserError
from ..message_fields import field_problem
from ..message_list import CallWaits, MessageList, call_waits
from ..message_types import MODES, AssistantMessage, Message, MessageMeta, ToolCall, UserMessage
from ..tools import ResolvedTools, ToolHost, resolve_tools
from ._log_index import LogIndex
from .config import CONFIG_FIELDS, ConversationConfig, config_problem, own_value, reasoning_settings
from .lock import TurnHold, TurnLock
from .mentions import Mentions
from .requests import RequestAssembly

if TYPE_CHECKING:
    from ..models.base import Model
    from ..store.capabilities import ConversationStore

__all__ = ["ConversationHost"]

C = TypeVar("C", bound=ToolHost)
"""The user's object a host serves (a `Conversation`; the host never imports it)."""


class ConversationHost(RequestAssembly, Generic[C]):
    """The engine's host and the turn lock's owner for one `Conversation` (see the module docstring).

    Attributes:
        conversation: The user's object this host serves; dynamic tool providers and toolsets are given it.
        id: The conversation id.
        config: The conversation's own config.
        store: Where every message is persisted the moment it exists (None: memory only).
        messages: The log.
        mentions: The objects its user messages mention, whose tools are offered.
        last_turn: The result of the latest turn started on the conversation.

    Raises (on construction):
        UserError: if ``messages`` are given for an id the store already holds.
    """

    def __init__(
        self,
        conversation: C,
        messages: MessageList | Iterable[Message] | None,
        config: ConversationConfig,
        store: ConversationStore | None,
        id: str | None,
    ) -> None:
        self.conversation = conversation
        self.config = config
        self.id: str = id or new_id()
        self.store = store
        self.last_turn: TurnResult | None = None
        self.mentions = Mentions()
        self._armed: CheckedSettings | None = None  # the settings of a reserved turn (`arm`)
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
            if info.active_mode and config.mode is None:
                config.mode = info.active_mode
            self._in_store = True
        self.messages = messages if isinstance(messages, MessageList) else MessageList(messages or ())
        for message in self.messages:
            self.mentions.note(message)
        if self._in_store:
            self._stored = len(self.messages)
        elif store is not None and len(self.messages):
            self._write_log(store)

    # -- the write-through ------------------------------------------------------------------------------------
    def record(self, message: Message) -> None:
        """Keep one new message: check it, persist it first (when there is a store), then append it to the log.

        The engine's sink (`TurnHost.record`) and `Conversation.record`'s. A user or assistant message that would
        follow calls a crash left unanswered is preceded by their ``interrupted`` results, written on this same
        path (they are made here, of checked parts: nothing checks them again).

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
        index = self._index
        if index is None or index.upto != len(self.messages):
            index = self._log_index()
        if message.id in index.ids:
            raise UserError(
                f"message {message.id!r} is already in the log of conversation {self.id}; a message is recorded "
                "once (to repeat one, copy it with a new id)"
            )
        kind = type(message)
        if index.open and (kind is UserMessage or kind is AssistantMessage):
            # A user or assistant message may not follow unanswered calls: answer those a crash left, first; calls
            # that wait for a decision or a result must be ended before anything new is asked.
            waits = call_waits(self.messages)
            if waits.unsettled:
                raise AwaitingDecision(_still_waiting(self.id, waits), [call.id for call in _unsettled(waits)])
            for repaired in interrupted_results(waits.dangling, mode_meta(self.config.mode)):
                self._write(index, repaired)
        self._write(index, message)

    def _write(self, index: LogIndex, message: Message) -> None:
        """Persist one checked message (store first), then append it to the log and the index."""
        store = self.store
        if store is not None:
            self.ensure_stored()
            store.append_checked(self.id, (message,), self._stored)
            self._stored += 1
        self.messages.append(message)
        index.add(message)
        if type(message) is UserMessage:
            self.mentions.note(message)
            if store is not None and self._untitled and message.content.strip():
                # The row was made before any user message (e.g. to keep the mode): title it now.
                store.update_metadata(self.id, title=self._title())
                self._untitled = False

    def add(self, messages: Iterable[Message]) -> None:
        """`Conversation.add`: wait for the conversation, then `record` each message."""
        lock = self._turn_lock()
        previous = lock.enter_sync(self, ..., None, self._catch_up)
        try:
            for message in messages:
                self.record(message)
        finally:
            lock.leave(keep_reserved=previous == "armed")  # a reservation made before stays

    def set_store(self, store: ConversationStore) -> None:
        """`Conversation.set_store`: keep the conversation in ``store`` from now on."""
        if store is self.store:
            return
        if self.store is not None:
            raise UserError("this conversation is already kept in another store")
        self.store = store
        if len(self.messages):
            self._write_log(store)
        self._move_artifacts_to(store)

    def _write_log(self, store: ConversationStore) -> None:
        """Write the whole log so far to ``store``, which keeps the conversation from now on (the store checks the
        messages: this host has not)."""
        self.ensure_stored()
        store.append(self.id, list(self.messages))
        self._stored = len(self.messages)

    @property
    def in_store(self) -> bool:
        """Whether the store holds this conversation (it was loaded from it, or written to it since)."""
        return self._in_store

    def ensure_stored(self) -> None:
        """Make the conversation's row in the store (with its title and mode) if it has none yet."""
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

    def apply_config_deltas(self, deltas: Mapping[str, Any]) -> None:
        """`Conversation.apply_config_deltas`: check every delta, then set them all (copies of lists and dicts)."""
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
            self.ensure_stored()
            self.store.update_metadata(self.id, active_mode=deltas["mode"])

    # -- the log index ----------------------------------------------------------------------------------------
    def known_call_ids(self) -> set[str]:
        """Every tool-call id in the log (`TurnHost`; kept up to date as messages are recorded)."""
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

    # -- the model and the tools ------------------------------------------------------------------------------
    def resolve_model(self) -> Model:
        """The model the next turn uses (`TurnHost`)."""
        from ..models import DEFAULT_MODELS, get_model

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

    def check_model(self, settings: CheckedSettings | None = None) -> None:
        """Ask the next turn's model whether it could serve a request at all (its API key, the turn's settings), so
        that a caller refuses before it stores a message no turn would answer (as ``threadline prompt`` does).

        Args:
            settings: The turn's checked settings, if any (``max_tokens``, ``reasoning``, provider extras…).

        Raises:
            UserError: for an unknown model or provider, a missing API key, or a setting the model refuses.
            CapabilityError: for reasoning settings the model lacks.
        """
        from ..message_types import user
        from ..models.base import ModelRequest

        options = plan_turn(self.config, settings or CheckedSettings())
        self.resolve_model().check(ModelRequest(messages=[user("…")], settings=options.settings))

    def resolve_tools(self) -> ResolvedTools:
        """The tools of the next request (`TurnHost`): the config's (dynamic ones evaluated now, given the
        conversation) and those of mentioned objects."""
        conversation = self.conversation
        resolved = resolve_tools(self.config.tools, conversation)
        self.mentions.add_tools(resolved, conversation)
        return resolved

    # -- one turn at a time -----------------------------------------------------------------------------------
    def hold(
        self,
        max_wait: float | EllipsisType | None = ...,
        on_wait: Callable[[], Any] | None = None,
        *,
        reserve: bool = False,
    ) -> TurnHold[C]:
        """`Conversation.hold`: the block is given the conversation."""
        return TurnHold(self.conversation, self, self._turn_lock(), self._catch_up, max_wait, on_wait, reserve)

    def release(self) -> None:
        """`Conversation.release`."""
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
            self.mentions.note(message)
        self._stored = len(stored)

    # -- turns ------------------------------------------------------------------------------------------------
    def arm(self, settings: CheckedSettings | None) -> None:
        """Keep the checked settings of the turn ``prompt_conversation`` reserved, for `plan` to use (None forgets
        settings armed before and not used)."""
        self._armed = settings

    def message_meta(self) -> MessageMeta | None:
        """The meta new messages are tagged with: the conversation's mode (None when no mode is set)."""
        return mode_meta(self.config.mode)

    def plan(self, **overrides: Any) -> TurnOptions:
        """The options of the next turn: `plan_turn` of the config and the armed settings (used up), then
        ``overrides`` (fields of `TurnOptions`)."""
        armed, self._armed = self._armed, None
        return plan_turn(self.config, armed or CheckedSettings(), **overrides)

    def turn(
        self, options: TurnOptions, result: TurnResult | None = None, *, hold: bool = False
    ) -> AsyncIterator[Message]:
        """Run one turn on the conversation (`run_turn` on this host); yields each new message as it is recorded.

        ``result`` (a new one if not given) becomes ``last_turn`` once the turn has the conversation: this is the
        one place it is written.

        Args:
            options: The turn's options (`plan`, `plan_turn`).
            result: Filled in as the turn goes.
            hold: Hold the conversation from the turn's first step to its end (waiting for another turn); without
                it the caller holds it already (``async with conversation.hold(): …``).
        """
        result = result if result is not None else TurnResult()
        held = self.hold() if hold else None
        return run_turn(self, options, result, hold=_TurnStart(self, result, held))

    def __repr__(self) -> str:
        return f"<ConversationHost {self.id} ({len(self.messages)} messages)>"


class _TurnStart:
    """Entered at a turn's first step: holds the conversation when asked, then makes the turn's result the
    conversation's ``last_turn``."""

    __slots__ = ("_held", "_host", "_result")

    def __init__(self, host: ConversationHost[Any], result: TurnResult, held: TurnHold[Any] | None) -> None:
        self._host = host
        self._result = result
        self._held = held

    async def __aenter__(self) -> None:
        if self._held is not None:
            await self._held.__aenter__()
        self._host.last_turn = self._result

    async def __aexit__(self, *exc: Any) -> None:
        if self._held is not None:
            await self._held.__aexit__(*exc)


_lock_creation = threading.Lock()


def _unsettled(waits: CallWaits) -> list[ToolCall]:
    return [item.call for item in waits.waiting] + [call for call, _ in waits.approved + waits.denied]


def _still_waiting(conversation_id: str, waits: CallWaits) -> str:
    """The refusal of a new message while calls wait, naming them and what ends each wait."""
    parts = [
        f"{item.call.id} ({item.tool}: "
        + ("submit_result" if item.kind == "external" else "approve or deny")
        + (f"; {item.reason}" if item.reason else "")
        + ")"
        for item in waits.waiting
    ]
    parts.extend(f"{call.id} ({call.name}: {decision.state}, resume runs it)" for call, decision in waits.approved)
    parts.extend(f"{call.id} ({call.name}: denied, resume answers it)" for call, decision in waits.denied)
    return (
        f"conversation {conversation_id} has tool calls that wait: {'; '.join(parts)}. Decide them "
        "(approve, deny, submit_result) and resume the conversation before asking anything new"
    )
