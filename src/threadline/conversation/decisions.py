"""Deciding tool calls that wait: `Conversation.approve`, ``deny`` and ``submit_result`` on the host
(docs/architecture.md#tool-calls-that-wait).

Each decision is written as the engine writes: on the host's record path (store first), while the conversation is
held (in this process, and through the store's lease in every other), after catching up with what other processes
stored. So two processes deciding the same call at once cannot both win: the second catches up, finds the call
decided, and is refused with `AwaitingDecision`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..engine.plan import mode_meta
from ..engine.waits import decision_entry, denial_text
from ..errors import AwaitingDecision, UserError
from ..message_list import AwaitingCall, call_waits
from ..message_types import APPROVAL_SCOPES, ApprovalMessage, ToolMessage
from ..tracing.hooks import report_decision

if TYPE_CHECKING:
    from .host import ConversationHost

__all__ = ["approve", "deny", "submit_result", "waiting_call"]


def waiting_call(host: ConversationHost[Any], call_id: str, kind: str, arguments_sha256: str | None) -> AwaitingCall:
    """The call ``call_id`` if it waits for ``kind`` (``"approval"`` or ``"external"``) with arguments of that hash.

    Raises:
        AwaitingDecision: for a call that does not wait (unknown, of an earlier turn, decided or answered already)
            or waits for the other kind of thing; the message names the calls that do wait.
        UserError: when ``arguments_sha256`` is given and differs from the call's (what the person saw is not what
            the model asked for).
    """
    if not isinstance(call_id, str) or not call_id:
        raise UserError("call_id must be a non-empty string")
    waits = call_waits(host.messages)
    found = next((waiting for waiting in waits.waiting if waiting.call.id == call_id), None)
    waiting_ids = [waiting.call.id for waiting in waits.waiting]
    if found is None:
        raise AwaitingDecision(
            f"tool call {call_id!r} of conversation {host.id} does not wait for anything: "
            f"{_why_not(host, call_id)} ({_listed(waits.waiting)})",
            waiting_ids,
        )
    if found.kind != kind:
        wanted = "submit_result" if found.kind == "external" else "approve or deny"
        raise AwaitingDecision(
            f"tool call {call_id!r} waits for {_what(found.kind)}, not {_what(kind)}: use {wanted}", waiting_ids
        )
    if arguments_sha256 is not None and arguments_sha256 != found.arguments_sha256:
        raise UserError(
            f"the arguments of tool call {call_id!r} are not the ones this decision was made on (their sha256 is "
            f"{found.arguments_sha256}, the decision names {arguments_sha256}); nothing was recorded"
        )
    return found


def approve(
    host: ConversationHost[Any],
    call_id: str,
    *,
    by: str | None,
    reason: str | None,
    arguments: dict[str, Any] | None,
    scope: str,
    arguments_sha256: str | None,
) -> ApprovalMessage:
    """`Conversation.approve` on a host the caller holds."""
    _check_text(by=by, reason=reason)
    if scope not in APPROVAL_SCOPES:
        raise UserError(f"scope must be one of {', '.join(map(repr, APPROVAL_SCOPES))}, got {scope!r}")
    found = waiting_call(host, call_id, "approval", arguments_sha256)
    if arguments is not None:
        arguments = _checked_arguments(host, found, arguments)
    entry = decision_entry(found.call, "approved", by=by, reason=reason, arguments=arguments, scope=scope)
    _record(host, entry)
    report_decision(host, entry)
    return entry


def deny(
    host: ConversationHost[Any], call_id: str, *, by: str | None, reason: str | None, arguments_sha256: str | None
) -> ApprovalMessage:
    """`Conversation.deny` on a host the caller holds: the decision, then the error result the model reads."""
    _check_text(by=by, reason=reason)
    found = waiting_call(host, call_id, "approval", arguments_sha256)
    entry = decision_entry(found.call, "denied", by=by, reason=reason)
    result = ToolMessage(
        tool_call_id=found.call.id, tool_name=found.call.name, content=denial_text(by, reason), is_error=True
    )
    _record(host, entry, result)  # a crash between the two: the next turn writes the result (engine.rounds.settle)
    report_decision(host, entry)
    return entry


def submit_result(host: ConversationHost[Any], call_id: str, content: Any, is_error: bool) -> ToolMessage:
    """`Conversation.submit_result` on a host the caller holds."""
    if type(is_error) is not bool:
        raise UserError(f"is_error must be True or False, got {type(is_error).__name__}")
    found = waiting_call(host, call_id, "external", None)
    if not isinstance(content, str):
        from ..tools import encode_result

        try:
            content = encode_result(content)
        except Exception as exc:
            raise UserError(f"the result of {call_id!r} cannot be written as JSON: {exc}") from None
    result = ToolMessage(tool_call_id=found.call.id, tool_name=found.call.name, content=content, is_error=is_error)
    _record(host, result)
    report_decision(host, result)
    return result


def _record(host: ConversationHost[Any], *messages: ApprovalMessage | ToolMessage) -> None:
    """Record each message on the host's write-through, tagged with the conversation's mode as a turn's are."""
    meta = mode_meta(host.config.mode)
    for message in messages:
        if meta is not None:
            message.meta = meta
        host.record(message)


def _checked_arguments(host: ConversationHost[Any], found: AwaitingCall, arguments: Any) -> dict[str, Any]:
    """Edited arguments, if the tool's schema takes them (as the model's would be checked)."""
    from ..tools import ToolArgumentsError

    if not isinstance(arguments, dict):
        raise UserError(f"arguments must be a dict, got {type(arguments).__name__}")
    tool = host.resolve_tools().tools.get(found.tool)
    if tool is None:
        raise UserError(
            f"the edited arguments of {found.call.id!r} cannot be checked: tool {found.tool!r} is not among this "
            "conversation's tools (give the conversation its tools first); nothing was recorded"
        )
    try:
        tool.validate(arguments)
    except ToolArgumentsError as exc:
        raise UserError(f"the edited arguments do not fit tool {found.tool!r}: {exc}; nothing was recorded") from None
    return dict(arguments)


def _check_text(**values: Any) -> None:
    for name, value in values.items():
        if value is not None and not isinstance(value, str):
            raise UserError(f"{name} must be a string, got {type(value).__name__}")


def _why_not(host: ConversationHost[Any], call_id: str) -> str:
    """Why a call does not wait: decided, answered, or unknown."""
    decided = None
    answered = False
    made = False
    for message in host.messages:
        if type(message) is ApprovalMessage and message.tool_call_id == call_id and message.state != "requested":
            decided = message
        elif type(message) is ToolMessage and message.tool_call_id == call_id:
            answered = True
        elif hasattr(message, "tool_calls") and any(call.id == call_id for call in message.tool_calls):
            made = True
    if decided is not None:
        return f"it was {decided.state} already, by {decided.by or 'someone'}"
    if answered:
        return "it has its result already"
    if made:
        return "it never waited"
    return "no such call in this conversation"


def _listed(waiting: list[AwaitingCall]) -> str:
    if not waiting:
        return "no call waits"
    return "waiting: " + ", ".join(f"{item.call.id} ({item.tool}, {_what(item.kind)})" for item in waiting)


def _what(kind: str) -> str:
    return "a result from outside" if kind == "external" else "a decision"
