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

from ..engine.waits import decision_entry, denial_text
from ..errors import AwaitingDecision, UserError
from ..message_list import AwaitingCall, MessageList, call_waits
from ..message_types import APPROVAL_SCOPES, Message, ToolMessage

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
    _check_text(by=by, reason=reason)
    if scope not in APPROVAL_SCOPES:
        raise UserError(f"scope must be one of {', '.join(map(repr, APPROVAL_SCOPES))}, got {scope!r}")
    log, found = _waiting(messages, call_id, "approval")
    log.append(decision_entry(found.call, "approved", by=by, reason=reason, scope=scope))
    return log


def deny_call(
    messages: Iterable[Message] | MessageList, call_id: str, *, by: str | None = None, reason: str | None = None
) -> MessageList:
    """``messages`` with the call ``call_id`` denied, and the error result the model reads (``denied by <by>:
    <reason>``), as `Conversation.deny` logs them.

    Raises:
        AwaitingDecision: when the call does not wait for a decision; UserError for a bad ``by`` or ``reason``.
    """
    _check_text(by=by, reason=reason)
    log, found = _waiting(messages, call_id, "approval")
    log.append(decision_entry(found.call, "denied", by=by, reason=reason))
    log.append(
        ToolMessage(
            tool_call_id=found.call.id, tool_name=found.call.name, content=denial_text(by, reason), is_error=True
        )
    )
    return log


def submit_call_result(
    messages: Iterable[Message] | MessageList, call_id: str, content: Any, *, is_error: bool = False
) -> MessageList:
    """``messages`` with the result of the external call ``call_id`` (text, or anything JSON can write).

    Raises:
        AwaitingDecision: when the call does not wait for a result; UserError for content JSON cannot write.
    """
    if type(is_error) is not bool:
        raise UserError(f"is_error must be True or False, got {type(is_error).__name__}")
    log, found = _waiting(messages, call_id, "external")
    if not isinstance(content, str):
        from ..tools import encode_result

        try:
            content = encode_result(content)
        except Exception as exc:
            raise UserError(f"the result of {call_id!r} cannot be written as JSON: {exc}") from None
    log.append(ToolMessage(tool_call_id=found.call.id, tool_name=found.call.name, content=content, is_error=is_error))
    return log


def _waiting(messages: Iterable[Message] | MessageList, call_id: str, kind: str) -> tuple[MessageList, AwaitingCall]:
    """A copy of ``messages`` and the call ``call_id``, which must wait for ``kind``."""
    if not isinstance(call_id, str) or not call_id:
        raise UserError("call_id must be a non-empty string")
    log = messages.copy() if isinstance(messages, MessageList) else MessageList(messages)
    waiting = call_waits(log).waiting
    ids = [item.call.id for item in waiting]
    found = next((item for item in waiting if item.call.id == call_id), None)
    listed = ", ".join(f"{item.call.id} ({item.tool}, {item.kind})" for item in waiting) or "none"
    if found is None:
        raise AwaitingDecision(f"tool call {call_id!r} does not wait for anything (calls that wait: {listed})", ids)
    if found.kind != kind:
        wanted = "submit_call_result" if found.kind == "external" else "approve_call or deny_call"
        raise AwaitingDecision(f"tool call {call_id!r} waits for {_what(found.kind)}: use {wanted}", ids)
    return log, found


def _what(kind: str) -> str:
    return "a result from outside" if kind == "external" else "a person's decision"


def _check_text(**values: Any) -> None:
    for name, value in values.items():
        if value is not None and not isinstance(value, str):
            raise UserError(f"{name} must be a string, got {type(value).__name__}")
