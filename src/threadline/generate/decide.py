"""Deciding the tool calls a ``generate_text`` result waits on, without a conversation
(docs/architecture.md#tool-calls-that-wait).

A call to a tool with ``approval=`` or ``external=True`` (or one that raised `ApprovalRequired`) ends the run with
``stop_reason="awaiting"``; ``result.awaiting`` lists those calls. Each function here returns a copy of the messages
with the decision appended; ``generate_text`` given them goes on: approved calls run first (with `call_approved`
true in them), denied ones get their error result, a submitted result is the call's result, then the model is asked
again::

    result = await generate_text(model=..., prompt="Pay Bob 5", tools=[pay])
    if result.stop_reason == "awaiting":
        messages = approve_call(result.messages, result.awaiting[0].call.id, by="alice")
        result = await generate_text(model=..., messages=messages, tools=[pay])

The result's ``messages`` are the whole log, requests and decisions included (never sent to a model). Editing the
arguments of a call before it runs needs its tool's schema: a `Conversation` does that (`Conversation.approve`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..engine import decisions as log_decisions
from ..message_list import AwaitingCall, MessageList
from ..message_types import Message

__all__ = ["approve_call", "deny_call", "submit_call_result"]


def approve_call(
    messages: Iterable[Message] | MessageList,
    call_id: str,
    *,
    by: str | None = None,
    reason: str | None = None,
    scope: str = "call",
) -> MessageList:
    """``messages`` with the call ``call_id`` approved (``scope="conversation"``: its tool's later calls in this log
    run at once, approved by rule).

    Raises:
        AwaitingDecision: when the call does not wait for a decision; UserError for a bad ``by``, ``reason`` or
            ``scope``. ``messages`` are never changed.
    """
    log, found = _waiting(messages, call_id, "approval")
    log.append(log_decisions.approval(found.call, by=by, reason=reason, arguments=None, scope=scope))
    return log


def deny_call(
    messages: Iterable[Message] | MessageList, call_id: str, *, by: str | None = None, reason: str | None = None
) -> MessageList:
    """``messages`` with the call ``call_id`` denied, and the error result the model reads (``denied by <by>:
    <reason>``), as `Conversation.deny` logs them.

    Raises:
        AwaitingDecision: when the call does not wait for a decision; UserError for a bad ``by`` or ``reason``.
    """
    log, found = _waiting(messages, call_id, "approval")
    log.extend(log_decisions.denial(found.call, by=by, reason=reason))
    return log


def submit_call_result(
    messages: Iterable[Message] | MessageList, call_id: str, content: Any, *, is_error: bool = False
) -> MessageList:
    """``messages`` with the result of the external call ``call_id`` (text, or anything JSON can write).

    Raises:
        AwaitingDecision: when the call does not wait for a result; UserError for content JSON cannot write.
    """
    log, found = _waiting(messages, call_id, "external")
    log.append(log_decisions.outside_result(found.call, content, is_error))
    return log


_VERBS = {"approval": "approve_call or deny_call", "external": "submit_call_result"}


def _waiting(messages: Iterable[Message] | MessageList, call_id: str, kind: str) -> tuple[MessageList, AwaitingCall]:
    """A copy of ``messages`` and the call ``call_id``, which must wait for ``kind``."""
    log = messages.copy() if isinstance(messages, MessageList) else MessageList(messages)
    return log, log_decisions.waiting_call(log, call_id, kind, verbs=_VERBS)
