"""`LogIndex`: what a turn host needs to know about its log at every record, without walking it.

The ids of the log (a message is recorded once), its tool-call ids (new calls get unique ids) and the calls still
without a result (a user or assistant message may not follow them: they are answered ``interrupted`` first). It is
kept up to date message by message, so each lookup costs the same however long the log is.
"""

from __future__ import annotations

from ..message_list import MessageList
from ..message_types import AssistantMessage, Message, ToolMessage, UserMessage

__all__ = ["LogIndex"]


class LogIndex:
    """The ids, the tool-call ids and the unanswered calls of a log, kept up to date as it grows.

    Call `sync` when the log may have grown behind the index's back (messages appended to the `MessageList`
    directly); `add` each message the host records.

    Attributes:
        ids: Every message id of the log.
        call_ids: Every tool-call id of the log.
        open: Calls of the last assistant message still without a result (as `MessageList.pending_tool_calls`).
        upto: How many messages of the log the index has seen.
    """

    __slots__ = ("call_ids", "ids", "open", "upto")

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.call_ids: set[str] = set()
        self.open: set[str] = set()
        self.upto = 0

    def sync(self, messages: MessageList) -> None:
        """Take in the messages of ``messages`` the index has not seen (all of them again if it was cut)."""
        size = len(messages)
        if size < self.upto:
            self.ids.clear()
            self.call_ids.clear()
            self.open.clear()
            self.upto = 0
        for message in messages[self.upto :]:
            self.add(message)

    def add(self, message: Message) -> None:
        """Take in one message appended to the log."""
        self.ids.add(message.id)
        kind = type(message)
        if kind is ToolMessage:
            if self.open:
                self.open.discard(message.tool_call_id)  # type: ignore[union-attr]
        elif kind is AssistantMessage:
            calls = message.tool_calls  # type: ignore[union-attr]
            if calls:
                opened = self.open = {call.id for call in calls}
                self.call_ids |= opened
            elif self.open:
                self.open = set()
        elif kind is UserMessage and self.open:
            self.open = set()  # as MessageList.pending_tool_calls: calls before a user message are not pending
        self.upto += 1
