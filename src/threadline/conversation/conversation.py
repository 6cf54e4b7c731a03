"""`Conversation`: the user's conversation — its log, its config, its turns, and the store that keeps them.

Iterating a conversation (``async for message in conversation``) runs one turn with the settings it was armed with
(`PromptBuilder.prompt_conversation`) and yields each new message as it is recorded. ``conversation.continuation``
returns a builder that refers to this same conversation.

What the engine and the turn lock need of a conversation — the write-through (store first, then the log in
memory), the log index, the mentions, the model and the tools of each request, the context of each request, one
turn at a time — is its host, ``conversation.host`` (`threadline.conversation.host`): this object keeps what a user
calls and hands the rest to it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from types import EllipsisType
from typing import TYPE_CHECKING, Any

import msgspec

from ..engine import TurnResult
from ..errors import StoreError, UserError, renamed_argument, warn_renamed
from ..message_list import AwaitingCall, MessageList, call_waits
from ..message_types import ApprovalMessage, AssistantMessage, Message, ToolMessage
from ..pricing.cost import Cost
from ..pricing.prices import log_cost
from . import decisions
from .config import ConversationConfig, own_config
from .host import ConversationHost
from .lock import TurnHold

if TYPE_CHECKING:
    from ..builder import PromptBuilder
    from ..context import BuiltContext
    from ..store.capabilities import ConversationStore

__all__ = ["Conversation"]

_IN_GROUP = (ToolMessage, ApprovalMessage)


class Conversation:
    """A conversation: its log, its config, and optionally a store that keeps every message as it happens.

    Its turns run on its host (``conversation.host``, a `ConversationHost`), which is the engine's `TurnHost`.

    One turn runs at a time (see "One turn at a time" in the README): a second turn waits until the first has
    ended — in this process, and in other processes and hosts sharing the store, through the store's lease on the
    conversation — for at most ``config.busy_timeout`` seconds, then raises `ConversationBusy`.

    Args:
        messages: The log to start from (a `MessageList` is used as is, not copied).
        config: How turns run (copied: changes to this conversation never reach another one given the same config).
        store: Persist every message here the moment it exists.
        id: The conversation id (a new one by default). With a store that already has this id and no ``messages``,
            the stored log is loaded.

    Attributes:
        host: What the engine and the turn lock use (the write-through, model and tool resolution, turns).
    """

    def __init__(
        self,
        messages: MessageList | Iterable[Message] | None = None,
        config: ConversationConfig | None = None,
        *,
        store: ConversationStore | None = None,
        id: str | None = None,
    ) -> None:
        own = own_config(config) if config is not None else ConversationConfig()
        self.host: ConversationHost[Conversation] = ConversationHost(self, messages, own, store, id)

    # -- what it is -------------------------------------------------------------------------------------------
    @property
    def id(self) -> str:
        """The conversation id."""
        return self.host.id

    @property
    def messages(self) -> MessageList:
        """The log."""
        return self.host.messages

    @property
    def config(self) -> ConversationConfig:
        """How its turns run (its own copy; change fields with `apply_config_deltas`, which checks them)."""
        return self.host.config

    @property
    def store(self) -> ConversationStore | None:
        """Where every message is kept as it happens (None: memory only; see `set_store`)."""
        return self.host.store

    @property
    def last_turn(self) -> TurnResult | None:
        """How the latest turn started on this conversation went (None before the first)."""
        return self.host.last_turn

    @classmethod
    def load(cls, id: str, store: ConversationStore, config: ConversationConfig | None = None) -> Conversation:
        """Restore a stored conversation (its log and its active mode).

        Raises:
            StoreError: if the store has no conversation with that id.
        """
        conversation = cls(config=config, store=store, id=id)  # loads it, if the store has it
        if not conversation.host.in_store:
            raise StoreError(f"no conversation {id!r} in {store.url}")
        return conversation

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
            self.host.ensure_stored()
            info = self.store.fork_conversation(self.id, at, title=title)
            stored = Conversation.load(info.id, self.store, config)
            stored.host.mentions.objects.update(self.host.mentions.objects)  # the objects @-mentioned so far, as below
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
            while cut < len(items) and type(items[cut]) in _IN_GROUP:  # the call's results and approval entries
                cut += 1
        forked = Conversation(MessageList(items[:cut]), config)
        forked.host.mentions.objects.update(self.host.mentions.objects)
        return forked

    @property
    def continuation(self) -> PromptBuilder:
        """A fresh builder that refers to this conversation."""
        from ..builder import PromptBuilder

        return PromptBuilder(conversation=self)

    def apply_config_deltas(self, deltas: Mapping[str, Any]) -> None:
        """Set config fields (lists and dicts are copied, so the caller's objects never change the config later).

        Raises:
            ValueError: for an unknown key, or a value the field cannot take (nothing is changed then).
        """
        self.host.apply_config_deltas(deltas)

    def attach(self, ref: str, obj: Any) -> None:
        """Bind a live object to a mention ``ref`` (e.g. after a reload); its tools are offered from now on."""
        self.host.mentions.attach(ref, obj)

    def set_store(self, store: ConversationStore) -> None:
        """Keep this conversation in ``store`` from now on: its log so far is written there at once.

        Raises:
            UserError: if it is already kept in another store.
        """
        self.host.set_store(store)

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
        self.host.add(messages)

    def record(self, message: Message) -> None:
        """Keep one new message: persist it first (when there is a store), then append it to the log.

        The engine records through the same path (`ConversationHost.record`). It does not wait for other turns, so
        call it while this conversation's turn is yours (a running turn, or `hold`); elsewhere use `add`. A user or
        assistant message that would follow calls a crash left unanswered is preceded by their ``interrupted``
        results.

        Raises:
            UserError: for a message whose id is already in the log, or with a field of the wrong type
                (``UserMessage(content=123)``), which no store could read back (nothing is recorded).
            StoreError: if the store failed; nothing was appended in memory either, so log and store stay equal.
            ConversationBusy: if the store holds messages this conversation has not seen (another writer appended
                without the lease); or if called from inside a tool this conversation's running turn is running
                (its call is not answered yet); nothing was recorded.
        """
        self.host.record(message)

    @property
    def text(self) -> str | None:
        """The content of the last assistant message."""
        for message in reversed(self.messages):
            if type(message) is AssistantMessage:
                return message.content
        return None

    @property
    def cost(self) -> Cost:
        """What the conversation's model calls cost, summed from its log (each assistant message's
        ``usage.cost``); what could not be priced is named in ``cost.unknown``, never counted as free."""
        return log_cost(self.messages)

    def build_context(self, mode: str | None = None, run_brief: Any = None, *, run_context: Any = None) -> BuiltContext:
        """The request the next turn would send (without a summary note), and its report; changes nothing but
        saving large tool outputs as artifacts. Used by ``threadline logs show ID --context``.

        ``run_brief`` is a `RunBrief` (run mode); ``run_context=``, its old name, still works for one release, with a
        `DeprecationWarning`."""
        if run_context is not None:
            if run_brief is not None:
                raise TypeError(
                    "build_context() got both run_brief= and its deprecated old name run_context=; pass only run_brief="
                )
            warn_renamed("Conversation.build_context(run_context=)", "Conversation.build_context(run_brief=)")
            run_brief = run_context
        return self.host.build_context(mode, run_brief)

    def read_artifact(self, name: str, offset: int = 0, limit: int | None = None) -> str:
        """Read an artifact of this conversation (a full tool output saved by the context builder).

        Raises:
            StoreError: if there is no such artifact.
        """
        return self.host.read_artifact(name, offset, limit)

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
        turns with ``conversation.host.turn(options)`` (a run of several nodes, a turn retried with feedback,
        messages applied and then answered). A turn holding the conversation is waited for first; a reservation
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
        return self.host.hold(max_wait, on_wait, reserve=reserve)

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
        self.host.release()

    # -- calls that wait ---------------------------------------------------------------------------------------
    @property
    def awaiting(self) -> list[AwaitingCall]:
        """The tool calls that wait: for a person's decision (``kind="approval"``) or a result from outside
        (``kind="external"``), in call order. Read from the log in memory: a conversation loaded in another process
        sees the waits stored when it was loaded (`Conversation.load` again to see later ones)."""
        return call_waits(self.messages).waiting

    def approve(
        self,
        call_id: str,
        *,
        by: str | None = None,
        reason: str | None = None,
        arguments: dict[str, Any] | None = None,
        scope: str = "call",
        arguments_sha256: str | None = None,
    ) -> ApprovalMessage:
        """Approve a call that waits for a decision; `resume` then runs it.

        Works from any process holding the store: the conversation is held (the store's writer lease) and caught
        up with the store first, so of two processes deciding one call, the second is refused.

        Args:
            call_id: The call (see `awaiting`).
            by: Who decides (free text, logged).
            reason: Why (logged).
            arguments: Run the call with these arguments instead of the model's (checked against the tool's schema
                first; the conversation must have the tool).
            scope: ``"call"``, or ``"conversation"``: this tool is approved for the rest of the conversation (its
                later calls run at once, logged as approved ``by="rule"``).
            arguments_sha256: The hash of the arguments the person saw (`AwaitingCall.arguments_sha256`): refused
                if the call's differ.

        Returns:
            The decision, as logged.

        Raises:
            AwaitingDecision: if the call does not wait for a decision (unknown, answered, decided already, or it
                waits for a result: `submit_result`); nothing is recorded.
            UserError: for arguments the tool refuses, or a hash that differs; nothing is recorded.
            ConversationBusy: if a turn holds the conversation and did not end within ``config.busy_timeout``.
        """
        with self.hold():
            return decisions.approve(
                self.host,
                call_id,
                by=by,
                reason=reason,
                arguments=arguments,
                scope=scope,
                arguments_sha256=arguments_sha256,
            )

    def deny(
        self, call_id: str, *, by: str | None = None, reason: str | None = None, arguments_sha256: str | None = None
    ) -> ApprovalMessage:
        """Deny a call that waits for a decision: the decision and the error result the model reads (``"denied
        by <by>: <reason>"``) are logged; `resume` goes on with the model.

        Raises:
            AwaitingDecision: if the call does not wait for a decision; nothing is recorded.
            UserError: for a hash that differs (as for `approve`); nothing is recorded.
            ConversationBusy: as for `approve`.
        """
        with self.hold():
            return decisions.deny(self.host, call_id, by=by, reason=reason, arguments_sha256=arguments_sha256)

    def submit_result(self, call_id: str, content: Any, *, is_error: bool = False) -> ToolMessage:
        """Give the result of a call to an external tool (``@tool(external=True)``); `resume` then goes on.

        Args:
            call_id: The call (see `awaiting`).
            content: The result: text, or anything JSON can hold (encoded as a tool's return value is).
            is_error: The result is a failure the model should read as one.

        Raises:
            AwaitingDecision: if the call does not wait for a result; nothing is recorded.
            ConversationBusy: as for `approve`.
        """
        with self.hold():
            return decisions.submit_result(self.host, call_id, content, is_error)

    def resume(self, on_message: Callable[[Message], Any] | None = None, **overrides: Any) -> TurnResult:
        """Go on after calls were decided: run the approved calls (with the arguments their approval gave), then
        the model, as a turn with no new request. A turn while calls still wait ends at once with
        ``stop_reason="awaiting"``. `run_sync` under the name of what it is for (``async for message in
        conversation.run()`` in async code).

        When the log ends with a finished answer there is nothing to go on from: nothing runs, and the result is
        an empty turn that ended (so a second ``resume``, from a double click or another process, asks the model
        nothing).

        Raises:
            As `run_sync`; and `UserError` when an approved call's tool is not among the conversation's tools
            (nothing is run then).
        """
        messages = self.messages
        if messages and type(last := messages[-1]) is AssistantMessage and not last.tool_calls and last.error is None:
            return TurnResult(stop_reason="end")
        return self.run_sync(on_message, **overrides)

    # -- turns ------------------------------------------------------------------------------------------------
    def run(self, *, result: TurnResult | None = None, **overrides: Any) -> AsyncIterator[Message]:
        """Run one turn with the armed settings (plus `TurnOptions` overrides); yields each new message.

        The turn waits while another turn holds the conversation (see `acquire`).

        Args:
            result: Filled in as the turn goes (it is also `last_turn` once the turn starts).
            **overrides: Fields of `TurnOptions` (``run_context=``, the old name of ``run_brief=``, still works for
                one release, with a `DeprecationWarning`).

        Raises:
            ConversationBusy: if another turn did not end within ``config.busy_timeout``.
        """
        _renamed_overrides(overrides, "Conversation.run")
        # The turn holds the conversation from its first step to its end.
        return self.host.turn(self.host.plan(**overrides), result, hold=True)

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
        from .._sync import run_sync

        _renamed_overrides(overrides, "Conversation.run_sync")
        result = TurnResult()

        async def drive() -> None:
            async for message in self.run(result=result, **overrides):
                if on_message is not None:
                    on_message(message)

        run_sync(drive())
        return result

    def __repr__(self) -> str:
        return f"<Conversation {self.id} ({len(self.messages)} messages)>"


def _renamed_overrides(overrides: dict[str, Any], where: str) -> None:
    """Turn ``run_context=``, the old name of the `TurnOptions` field ``run_brief``, into ``run_brief=`` in a call's
    ``overrides``, with a `DeprecationWarning` (for one release).

    Raises:
        TypeError: when both names are given.
    """
    if "run_context" in overrides:
        # stacklevel 5: the warning names the line that called ``where``.
        overrides["run_brief"] = renamed_argument(
            overrides, "run_context", "run_brief", overrides.get("run_brief"), where, stacklevel=5
        )
