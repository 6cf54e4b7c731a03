"""Deciding tool calls that wait: `Conversation.approve`, ``deny`` and ``submit_result`` on the host
(docs/architecture.md#tool-calls-that-wait).

Each decision is written as the engine writes: on the host's record path (store first), while the conversation is
held (in this process, and through the store's lease in every other), after catching up with what other processes
stored. So two processes deciding the same call at once cannot both win: the second catches up, finds the call
decided, and is refused with `AwaitingDecision`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..engine import decisions as log_decisions
from ..engine.plan import mode_meta
from ..errors import UserError
from ..message_list import AwaitingCall
from ..message_types import ApprovalMessage, ToolMessage
from ..tracing.hooks import report_decision

if TYPE_CHECKING:
    from .host import ConversationHost

__all__ = ["approve", "deny", "submit_result", "waiting_call"]


def waiting_call(host: ConversationHost[Any], call_id: str, kind: str, arguments_sha256: str | None) -> AwaitingCall:
    """The call ``call_id`` of the host's log if it waits for ``kind`` with arguments of that hash
    (`threadline.engine.decisions.waiting_call`, the errors naming the conversation)."""
    return log_decisions.waiting_call(host.messages, call_id, kind, arguments_sha256, conversation_id=host.id)


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
    found = waiting_call(host, call_id, "approval", arguments_sha256)
    if arguments is not None:
        arguments = _checked_arguments(host, found, arguments)
    entry = log_decisions.approval(found.call, by=by, reason=reason, arguments=arguments, scope=scope)
    _record(host, entry)
    report_decision(host, entry)
    return entry


def deny(
    host: ConversationHost[Any], call_id: str, *, by: str | None, reason: str | None, arguments_sha256: str | None
) -> ApprovalMessage:
    """`Conversation.deny` on a host the caller holds: the decision, then the error result the model reads."""
    found = waiting_call(host, call_id, "approval", arguments_sha256)
    entry, result = log_decisions.denial(found.call, by=by, reason=reason)
    _record(host, entry, result)  # a crash between the two: the next turn writes the result (engine.rounds.settle)
    report_decision(host, entry)
    return entry


def submit_result(host: ConversationHost[Any], call_id: str, content: Any, is_error: bool) -> ToolMessage:
    """`Conversation.submit_result` on a host the caller holds."""
    found = waiting_call(host, call_id, "external", None)
    result = log_decisions.outside_result(found.call, content, is_error)
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
