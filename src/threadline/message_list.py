"""`MessageList`, the log itself, and its protocol checks (`validate_messages`).

The messages it holds are the value types of `threadline.message_types`; whether each field can be written and read
back is `threadline.message_fields`; the versioned JSON forms and the readers of older and foreign formats are
`threadline.serialization`. This module sits above all three, so the one-way order is: value types, then their field
checks and forms, then the log.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, SupportsIndex, overload

from .errors import ProtocolError
from .message_fields import field_problem
from .message_types import (
    MESSAGE_TYPES,
    ApprovalKind,
    ApprovalMessage,
    AssistantMessage,
    Message,
    ToolCall,
    ToolMessage,
    UserMessage,
    arguments_sha256,
)

__all__ = ["AwaitingCall", "CallWaits", "MessageList", "approved_by_rule", "call_waits", "validate_messages"]


class MessageList:
    """The mutable, ordered container of a conversation's messages; the single source of truth.

    Serialization lives only here: `to_dict`/`to_json` write version ``"2.1"``; `from_dict`/`from_json` read it,
    ``"2.0"``, the fluent_llm ``"1.0"`` format, and a bare list of OpenAI chat messages.
    """

    __slots__ = ("_items",)

    def __init__(self, messages: Iterable[Message] | None = None) -> None:
        items = list(messages) if messages is not None else []
        for index, message in enumerate(items):
            _check_message(message, index)
        self._items: list[Message] = items

    @classmethod
    def unchecked(cls, items: list[Message]) -> MessageList:
        """A list of the messages ``items`` as they are, without the checks of `append`: for messages that were
        checked when they were written, such as a store reading back its own rows (a long log then loads without
        a second pass). ``items`` is taken, not copied. `validate` still checks the whole protocol."""
        new = cls.__new__(cls)
        new._items = items
        return new

    def append(self, message: Message) -> None:
        """Add one message at the end."""
        _check_message(message, len(self._items))
        self._items.append(message)

    def extend(self, messages: Iterable[Message]) -> None:
        """Add several messages at the end, in order."""
        items = list(messages)
        for offset, message in enumerate(items):
            _check_message(message, len(self._items) + offset)
        self._items.extend(items)

    def copy(self) -> MessageList:
        """A new list holding the same messages."""
        return MessageList.unchecked(list(self._items))

    def __iter__(self) -> Iterator[Message]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    @overload
    def __getitem__(self, index: SupportsIndex) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> MessageList: ...
    def __getitem__(self, index: SupportsIndex | slice) -> Message | MessageList:
        if isinstance(index, slice):
            return MessageList.unchecked(self._items[index])
        return self._items[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageList):
            return self._items == other._items
        if isinstance(other, list):
            return self._items == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"MessageList({len(self._items)} messages)"

    def validate(self) -> None:
        """Check that the log can be stored and read back, and the tool-call protocol.

        Every field has the type its message declares (rule ``invalid_field``: messages made in Python are not
        checked when made, so ``UserMessage(content=123)`` is caught here). No two messages share an id. Every tool
        result answers a call of an earlier assistant message with the same id, at most once, and the results of
        one assistant message come before the next assistant or user message. A log may end with unanswered calls
        (a crash mid-loop); the loop and the context builder repair that before sending.

        Approval entries (`ApprovalMessage`) come after their call and before the next assistant or user message,
        with the hash of the call's arguments: at most one request per call, a decision only after a request for a
        person's decision (or by ``"rule"`` after the tool was approved for the conversation), at most one
        decision, and no result for a call that waits for a decision until it is decided. A ``"started"`` entry
        follows an approval, once; after it, and only then, the call may be requested again (it stopped while it
        ran), which starts a new wait.

        Raises:
            ProtocolError: naming the index of the first offending message and the rule.
        """
        validate_messages(self._items)

    def pending_tool_calls(self) -> list[ToolCall]:
        """Tool calls of the last assistant message that have no result yet: those a crash left dangling and those
        that wait (`call_waits` tells them apart)."""
        answered: set[str] = set()
        for message in reversed(self._items):
            if isinstance(message, ToolMessage):
                answered.add(message.tool_call_id)
            elif isinstance(message, AssistantMessage):
                return [call for call in message.tool_calls if call.id not in answered]
            elif isinstance(message, UserMessage):
                return []
        return []

    # Serialization: implemented in threadline.serialization, which owns the wire forms and their versions. Imported
    # when a log is first written or read: `import threadline` needs none of it (it is some 6 ms of import time).
    def to_dict(self) -> dict[str, Any]:
        """``{"version": "2.1", "messages": [...]}`` with JSON-ready values."""
        from .serialization.native import dump_dict

        return dump_dict(self._items)

    def to_json(self) -> str:
        """The version ``"2.1"`` JSON text."""
        from .serialization.native import dump_json

        return dump_json(self._items).decode("utf-8")

    @classmethod
    def from_dict(cls, data: Any) -> MessageList:
        """Read version ``"2.1"`` or ``"2.0"``, fluent_llm ``"1.0"``, or a bare list of OpenAI chat messages.

        Raises:
            MessageListDeserializationError: naming the offending position and field; nothing partial is returned.
        """
        from .serialization.native import load_data

        return cls.unchecked(load_data(data))

    @classmethod
    def from_json(cls, text: str | bytes) -> MessageList:
        """Parse JSON text in any format `from_dict` reads.

        Raises:
            MessageListDeserializationError: for broken JSON or any malformed content.
        """
        from .serialization.native import load_json

        return cls.unchecked(load_json(text))


def _check_message(message: object, index: int) -> None:
    if type(message) not in MESSAGE_TYPES:
        raise TypeError(
            f"item {index} is a {type(message).__name__}, not a message "
            "(SystemMessage, UserMessage, AssistantMessage, ToolMessage or ApprovalMessage)"
        )


def validate_messages(items: Iterable[Message], *, check_fields: bool = True) -> None:
    """The check behind `MessageList.validate`, for any sequence of messages; ``check_fields=False`` leaves out the
    field types, for messages a decoder has just made (it checked them)."""
    pending: dict[str, int] = {}  # call id -> index of the assistant message that made it
    answered: set[str] = set()
    seen: dict[str, int] = {}  # message id -> index of the message that has it
    waits: dict[str, _Wait] = {}  # call id -> its approval entries so far (calls of the latest assistant message)
    owner: AssistantMessage | None = None  # the latest assistant message with calls
    by_rule: set[str] = set()  # tools approved for the rest of the conversation
    for index, message in enumerate(items):
        problem = field_problem(message) if check_fields else None
        if problem is not None:
            raise ProtocolError(f"{problem} (no store could read it back)", index=index, rule="invalid_field")
        if message.id in seen:
            raise ProtocolError(
                f"message id {message.id!r} is already the id of message {seen[message.id]} "
                "(stores keep one message per id)",
                index=index,
                rule="duplicate_message_id",
            )
        seen[message.id] = index
        if isinstance(message, ToolMessage):
            call_id = message.tool_call_id
            if waits:
                wait = waits.get(call_id)
                if wait is not None and wait.kind == "approval" and wait.decision is None:
                    raise ProtocolError(
                        f"tool call {call_id!r} waits for a decision, yet this result answers it",
                        index=index,
                        rule="undecided",
                    )
            if call_id in pending:
                del pending[call_id]
                answered.add(call_id)
            elif call_id in answered:
                raise ProtocolError(f"tool call {call_id!r} is answered more than once", index=index, rule="duplicate")
            else:
                raise ProtocolError(
                    f"tool result answers {call_id!r}, which no earlier assistant message called",
                    index=index,
                    rule="orphan",
                )
        elif isinstance(message, (AssistantMessage, UserMessage)):
            if pending:
                call_id, origin = next(iter(pending.items()))
                raise ProtocolError(
                    f"tool call {call_id!r} of message {origin} has no result before this "
                    f"{'assistant' if isinstance(message, AssistantMessage) else 'user'} message",
                    index=index,
                    rule="unanswered",
                )
            if isinstance(message, AssistantMessage):
                answered.clear()
                waits.clear()
                if message.tool_calls:
                    owner = message
                for call in message.tool_calls:
                    if call.id in pending:
                        raise ProtocolError(
                            f"tool call id {call.id!r} appears twice in one message", index=index, rule="duplicate_id"
                        )
                    pending[call.id] = index
        elif type(message) is ApprovalMessage:
            _check_approval(message, index, pending, owner, waits, by_rule)


class _Wait:
    """What `validate_messages` knows of one call's approval entries."""

    __slots__ = ("decision", "digest", "kind", "started")

    def __init__(self, kind: str | None, decision: str | None, digest: str) -> None:
        self.kind = kind  # the request's kind (None: approved by rule without a request)
        self.decision = decision
        self.digest = digest  # the call's arguments_sha256, computed once per call
        self.started = False  # an approved call began to run (a "started" entry)


def _check_approval(
    entry: ApprovalMessage,
    index: int,
    pending: dict[str, int],
    owner: AssistantMessage | None,
    waits: dict[str, _Wait],
    by_rule: set[str],
) -> None:
    call_id = entry.tool_call_id
    if call_id not in pending or owner is None:
        raise ProtocolError(
            f"approval entry for {call_id!r}, which is not a call of the latest assistant message still without a "
            "result",
            index=index,
            rule="misplaced_approval",
        )
    wait = waits.get(call_id)
    call = next(call for call in owner.tool_calls if call.id == call_id)
    digest = wait.digest if wait is not None else arguments_sha256(call)
    if entry.tool_name != call.name or entry.arguments_sha256 != digest:
        raise ProtocolError(
            f"approval entry for {call_id!r} names other arguments or another tool than the call "
            f"(tool {entry.tool_name!r}, arguments_sha256 {entry.arguments_sha256[:12]}…)",
            index=index,
            rule="approval_hash",
        )
    if entry.scope != "call" and entry.state != "approved":
        raise ProtocolError(f"only an approval may have scope {entry.scope!r}", index=index, rule="approval_scope")
    if entry.arguments is not None and entry.state != "approved":
        raise ProtocolError("only an approval may edit the arguments", index=index, rule="approval_arguments")
    if entry.state == "requested":
        # Requested again only after an approved call started and stopped without a result (it may have run).
        if wait is not None and not wait.started:
            raise ProtocolError(f"tool call {call_id!r} is requested twice", index=index, rule="duplicate_request")
        waits[call_id] = _Wait(entry.kind, None, digest)
        return
    if entry.state == "started":
        if wait is None or wait.decision != "approved" or wait.started:
            raise ProtocolError(
                f"tool call {call_id!r} starts without an approval it has not started on yet",
                index=index,
                rule="misplaced_start",
            )
        wait.started = True
        return
    if wait is None:
        if entry.state == "approved" and entry.by == "rule" and call.name in by_rule:
            waits[call_id] = _Wait(None, "approved", digest)
            return
        raise ProtocolError(
            f"decision on tool call {call_id!r}, which was not requested", index=index, rule="decision_without_request"
        )
    if wait.kind != "approval":
        raise ProtocolError(
            f"decision on tool call {call_id!r}, which waits for a result, not a decision",
            index=index,
            rule="decision_on_external",
        )
    if wait.decision is not None:
        raise ProtocolError(f"tool call {call_id!r} is decided twice", index=index, rule="duplicate_decision")
    wait.decision = entry.state
    if entry.scope == "conversation":
        by_rule.add(call.name)


@dataclass(frozen=True, slots=True)
class AwaitingCall:
    """A tool call that waits: for a person's decision (``kind="approval"``) or for a result from outside
    (``kind="external"``).

    Attributes:
        call: The call as the model made it.
        tool: The called tool's name.
        kind: ``"approval"`` or ``"external"``.
        reason: Why it waits (the tool's, the policy's or `ApprovalRequired`'s words).
        arguments_sha256: The hash a decision binds to (`arguments_sha256`).
        requested: The ``"requested"`` entry in the log.
    """

    call: ToolCall
    tool: str
    kind: ApprovalKind
    reason: str | None
    arguments_sha256: str
    requested: ApprovalMessage


@dataclass(slots=True)
class CallWaits:
    """The calls of the latest assistant message that have no result yet, by what they wait for.

    Attributes:
        dangling: Calls with no approval entry: a crash or an interruption left them (repaired with an
            ``interrupted`` result before the conversation goes on).
        waiting: Calls that wait for a decision or a result.
        approved: Approved calls not yet run, each with its decision (whose ``arguments``, when set, replace the
            model's).
        denied: Denied calls whose error result is not yet in the log, each with its decision.
        started: Approved calls that began to run and have no result (the process stopped meanwhile: they may
            have run), each with its decision.
    """

    dangling: list[ToolCall] = field(default_factory=list)
    waiting: list[AwaitingCall] = field(default_factory=list)
    approved: list[tuple[ToolCall, ApprovalMessage]] = field(default_factory=list)
    denied: list[tuple[ToolCall, ApprovalMessage]] = field(default_factory=list)
    started: list[tuple[ToolCall, ApprovalMessage]] = field(default_factory=list)

    @property
    def unsettled(self) -> bool:
        """Whether any call waits, or was decided and not yet run or answered."""
        return bool(self.waiting or self.approved or self.denied or self.started)


def call_waits(messages: Sequence[Message] | MessageList) -> CallWaits:
    """What the calls of the latest assistant message still without a result wait for (walks back from the end to
    that message only)."""
    results: set[str] = set()
    entries: dict[str, list[ApprovalMessage]] = {}
    owner: AssistantMessage | None = None
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ToolMessage):
            results.add(message.tool_call_id)
        elif isinstance(message, ApprovalMessage):
            entries.setdefault(message.tool_call_id, []).insert(0, message)
        elif isinstance(message, AssistantMessage):
            owner = message
            break
        elif isinstance(message, UserMessage):
            break
    waits = CallWaits()
    if owner is None:
        return waits
    for call in owner.tool_calls:
        if call.id in results:
            continue
        found = entries.get(call.id)
        if not found:
            waits.dangling.append(call)
            continue
        last = found[-1]
        if last.state == "approved":
            waits.approved.append((call, last))
        elif last.state == "started":
            decision = next(entry for entry in reversed(found) if entry.state == "approved")
            waits.started.append((call, decision))
        elif last.state == "denied":
            waits.denied.append((call, last))
        else:
            waits.waiting.append(AwaitingCall(call, call.name, last.kind, last.reason, last.arguments_sha256, last))
    return waits


def approved_by_rule(messages: Iterable[Message]) -> set[str]:
    """The tools approved ``scope="conversation"`` in the log: their later calls are approved by rule."""
    return {
        message.tool_name
        for message in messages
        if type(message) is ApprovalMessage and message.state == "approved" and message.scope == "conversation"
    }
