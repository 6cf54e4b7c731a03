"""`MessageList`, the log itself, and its protocol checks (`validate_messages`).

The messages it holds are the value types of `threadline.message_types`; whether each field can be written and read
back is `threadline.message_fields`; the versioned JSON forms and the readers of older and foreign formats are
`threadline.serialization`. This module sits above all three, so the one-way order is: value types, then their field
checks and forms, then the log.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, SupportsIndex, overload

from .errors import ProtocolError
from .message_fields import field_problem
from .message_types import MESSAGE_TYPES, AssistantMessage, Message, ToolCall, ToolMessage, UserMessage

__all__ = ["MessageList", "validate_messages"]


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

        Raises:
            ProtocolError: naming the index of the first offending message and the rule.
        """
        validate_messages(self._items)

    def pending_tool_calls(self) -> list[ToolCall]:
        """Tool calls of the last assistant message that have no result yet (what a crash left dangling)."""
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
            "(SystemMessage, UserMessage, AssistantMessage or ToolMessage)"
        )


def validate_messages(items: Iterable[Message], *, check_fields: bool = True) -> None:
    """The check behind `MessageList.validate`, for any sequence of messages; ``check_fields=False`` leaves out the
    field types, for messages a decoder has just made (it checked them)."""
    pending: dict[str, int] = {}  # call id -> index of the assistant message that made it
    answered: set[str] = set()
    seen: dict[str, int] = {}  # message id -> index of the message that has it
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
                for call in message.tool_calls:
                    if call.id in pending:
                        raise ProtocolError(
                            f"tool call id {call.id!r} appears twice in one message", index=index, rule="duplicate_id"
                        )
                    pending[call.id] = index
