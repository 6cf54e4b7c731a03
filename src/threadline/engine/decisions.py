"""Decisions on a log's waiting calls, whoever holds the log: which call a decision is about, and the messages it
writes (docs/architecture.md#tool-calls-that-wait).

`Conversation.approve` / ``deny`` / ``submit_result`` (`threadline.conversation.decisions`, which records them on the
conversation's write-through) and ``generate_text``'s `approve_call` / `deny_call` / `submit_call_result` (which
return a copy of the messages with them) both use these, so a decision is checked and written the same way
everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import AwaitingDecision, UserError
from ..message_list import AwaitingCall, MessageList, call_waits
from ..message_types import APPROVAL_SCOPES, ApprovalMessage, AssistantMessage, Message, ToolCall, ToolMessage
from .waits import decision_entry, denial_result

__all__ = ["VERBS", "approval", "denial", "outside_result", "waiting_call"]

VERBS: Mapping[str, str] = {"approval": "approve or deny", "external": "submit_result"}
"""What ends each kind of wait, as a conversation's methods are named (an error names it)."""


def waiting_call(
    messages: Sequence[Message] | MessageList,
    call_id: str,
    kind: str,
    arguments_sha256: str | None = None,
    *,
    verbs: Mapping[str, str] = VERBS,
    conversation_id: str | None = None,
) -> AwaitingCall:
    """The call ``call_id`` of ``messages`` if it waits for ``kind`` (``"approval"`` or ``"external"``) and, when
    ``arguments_sha256`` is given, has arguments of that hash.

    Raises:
        AwaitingDecision: for a call that does not wait (unknown, of an earlier turn, decided or answered already)
            or waits for the other kind of thing (the message says what ends its wait, from ``verbs``); the message
            names the calls that do wait, and the conversation when ``conversation_id`` is given.
        UserError: for a ``call_id`` that is not a string, or a hash that differs from the call's (what the person
            saw is not what the model asked for).
    """
    if not isinstance(call_id, str) or not call_id:
        raise UserError("call_id must be a non-empty string")
    where, holder = ("", "log") if conversation_id is None else (f" of conversation {conversation_id}", "conversation")
    waiting = call_waits(messages).waiting
    ids = [item.call.id for item in waiting]
    found = next((item for item in waiting if item.call.id == call_id), None)
    if found is None:
        listed = ", ".join(f"{item.call.id} ({item.tool}, {item.kind})" for item in waiting) or "none"
        raise AwaitingDecision(
            f"tool call {call_id!r}{where} does not wait for anything: {_why_not(messages, call_id, holder)} "
            f"(calls that wait: {listed})",
            ids,
        )
    if found.kind != kind:
        raise AwaitingDecision(
            f"tool call {call_id!r} waits for {_what(found.kind)}, not {_what(kind)}: use {verbs[found.kind]}", ids
        )
    if arguments_sha256 is not None and arguments_sha256 != found.arguments_sha256:
        raise UserError(
            f"the arguments of tool call {call_id!r} are not the ones this decision was made on (their sha256 is "
            f"{found.arguments_sha256}, the decision names {arguments_sha256}); nothing was recorded"
        )
    return found


def approval(
    call: ToolCall, *, by: str | None, reason: str | None, arguments: dict[str, Any] | None, scope: str
) -> ApprovalMessage:
    """The ``"approved"`` entry of ``call`` (``arguments``, when given, checked by the caller against the tool).

    Raises:
        UserError: for a ``by`` or ``reason`` that is not text, or an unknown ``scope``.
    """
    _check_text(by=by, reason=reason)
    if scope not in APPROVAL_SCOPES:
        raise UserError(f"scope must be one of {', '.join(map(repr, APPROVAL_SCOPES))}, got {scope!r}")
    return decision_entry(call, "approved", by=by, reason=reason, arguments=arguments, scope=scope)


def denial(call: ToolCall, *, by: str | None, reason: str | None) -> tuple[ApprovalMessage, ToolMessage]:
    """The ``"denied"`` entry of ``call`` and the error result the model reads (``denied by <by>: <reason>``).

    Raises:
        UserError: for a ``by`` or ``reason`` that is not text.
    """
    _check_text(by=by, reason=reason)
    return decision_entry(call, "denied", by=by, reason=reason), denial_result(call, by, reason)


def outside_result(call: ToolCall, content: Any, is_error: bool) -> ToolMessage:
    """The result of an external call: ``content`` as text, or encoded as a tool's return value is.

    Raises:
        UserError: for an ``is_error`` that is not a bool, or content JSON cannot write.
    """
    if type(is_error) is not bool:
        raise UserError(f"is_error must be True or False, got {type(is_error).__name__}")
    if not isinstance(content, str):
        from ..tools import encode_result

        try:
            content = encode_result(content)
        except Exception as exc:
            raise UserError(f"the result of {call.id!r} cannot be written as JSON: {exc}") from None
    return ToolMessage(tool_call_id=call.id, tool_name=call.name, content=content, is_error=is_error)


def _check_text(**values: Any) -> None:
    for name, value in values.items():
        if value is not None and not isinstance(value, str):
            raise UserError(f"{name} must be a string, got {type(value).__name__}")


def _why_not(messages: Sequence[Message] | MessageList, call_id: str, holder: str) -> str:
    """Why a call does not wait: decided, answered, or unknown."""
    decided = None
    answered = made = False
    for message in messages:
        if type(message) is ApprovalMessage and message.tool_call_id == call_id:
            if message.state in ("approved", "denied"):
                decided = message
        elif type(message) is ToolMessage and message.tool_call_id == call_id:
            answered = True
        elif type(message) is AssistantMessage and any(call.id == call_id for call in message.tool_calls):
            made = True
    if decided is not None:
        return f"it was {decided.state} already, by {decided.by or 'someone'}"
    if answered:
        return "it has its result already"
    return "it never waited" if made else f"no such call in this {holder}"


def _what(kind: str) -> str:
    return "a result from outside" if kind == "external" else "a decision"
