"""Tool calls that wait: which calls of a round may run now, and what the log records of those that may not
(docs/architecture.md#tool-calls-that-wait).

A call waits when its tool is external (its result comes from outside: ``@tool(external=True)``), when its tool or
the turn's policy asks for approval (``@tool(approval=...)``, ``.approval(policy)``), or when its tool raises
`ApprovalRequired` before it acts. The wait is an `ApprovalMessage` with ``state="requested"`` in the log, so it
lives as long as the log: any process holding the store can decide it (`Conversation.approve`, ``deny``,
``submit_result``), and the next turn on the conversation (`Conversation.resume`) runs what was approved.

A tool approved ``scope="conversation"`` is approved for the rest of the conversation: its later calls run at once,
each after an ``"approved"`` entry of its own with ``by="rule"``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from .._exception_text import describe_exception
from ..message_list import approved_by_rule
from ..message_types import ApprovalKind, ApprovalMessage, Message, ToolCall, ToolMessage, arguments_sha256

if TYPE_CHECKING:
    from ..tools import Tool

__all__ = [
    "DENIED",
    "EXTERNAL_REASON",
    "RECOVERED_REASON",
    "STOPPED_REASON",
    "ApprovalPolicy",
    "Gate",
    "RoundGates",
    "decision_entry",
    "denial_result",
    "request_entry",
    "round_gates",
    "started_entry",
]

ApprovalPolicy: TypeAlias = "bool | Callable[[ToolCall], bool | str | None] | None"
"""A turn's default for tools that say nothing of approval (``.approval(policy)``): True (every call waits for a
person), False or None (none does), or a function of the `ToolCall` that answers True, False, or a reason (a
non-empty string: the call waits, and the person reads why)."""

EXTERNAL_REASON = "waits for a result from outside this process (an external tool)"
RECOVERED_REASON = (
    "its process stopped while it ran, and the turn was recovered: it may have run; decide whether it runs again"
)
STOPPED_REASON = (
    "it was approved and began to run, but its process stopped before its result was logged: it may have run; "
    "decide again"
)
DENIED = "denied by {by}: {reason}"


def denial_result(call: ToolCall, by: str | None, reason: str | None) -> ToolMessage:
    """The error result a denied call gets (what the model reads: ``denied by <by>: <reason>``)."""
    text = DENIED.format(by=by or "a person", reason=reason or "no reason given")
    return ToolMessage(tool_call_id=call.id, tool_name=call.name, content=text, is_error=True)


class Gate:
    """What a call must do before it runs: wait (``request`` is the entry to record) or run after an approval by
    rule (``request`` is None; ``rule``, then ``started`` unless the tool is idempotent, are the entries to record
    first)."""

    __slots__ = ("request", "rule", "started")

    def __init__(
        self,
        request: ApprovalMessage | None = None,
        rule: ApprovalMessage | None = None,
        started: ApprovalMessage | None = None,
    ) -> None:
        self.request = request
        self.rule = rule
        self.started = started


class RoundGates:
    """The gates of one round's calls: made only when an offered tool or the turn's policy can make a call wait."""

    __slots__ = ("_messages", "_policy", "_rules", "_tools")

    def __init__(self, tools: Mapping[str, Tool], policy: ApprovalPolicy, messages: Iterable[Message]) -> None:
        self._tools = tools
        self._policy = policy
        self._messages = messages
        self._rules: set[str] | None = None

    def check(self, call: ToolCall) -> Gate | None:
        """The call's gate, or None when it runs now with nothing to record first."""
        tool = self._tools.get(call.name)
        if tool is None:
            return None  # an unknown tool: its error result says so
        if tool.external:
            return Gate(request=request_entry(call, "external", EXTERNAL_REASON))
        rule = tool.approval if tool.approval is not None else self._policy
        reason = _asks(rule, call, tool.approval is not None)
        if reason is None:
            return None
        if self._rules is None:
            self._rules = approved_by_rule(self._messages)
        if call.name in self._rules:
            rule = decision_entry(call, "approved", by="rule", reason="approved for this conversation")
            return Gate(rule=rule, started=None if tool.idempotent else started_entry(call))
        return Gate(request=request_entry(call, "approval", reason))


def round_gates(tools: Mapping[str, Tool], policy: ApprovalPolicy, messages: Iterable[Message]) -> RoundGates | None:
    """The gates of a round, or None when no offered tool and no policy can make a call wait (the common case:
    the round then pays nothing for approvals)."""
    if policy is not None and policy is not False:
        return RoundGates(tools, policy, messages)
    for tool in tools.values():
        if tool.external or (tool.approval is not None and tool.approval is not False):
            return RoundGates(tools, policy, messages)
    return None


def request_entry(call: ToolCall, kind: ApprovalKind, reason: str | None) -> ApprovalMessage:
    """The ``"requested"`` entry that makes ``call`` wait."""
    return ApprovalMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        state="requested",
        kind=kind,
        reason=reason,
        arguments_sha256=arguments_sha256(call),
    )


def started_entry(call: ToolCall) -> ApprovalMessage:
    """The ``"started"`` entry written just before an approved call of a tool that is not idempotent runs: should the
    process stop before the result is logged, the next turn asks a person again rather than run it twice."""
    return ApprovalMessage(
        tool_call_id=call.id, tool_name=call.name, state="started", arguments_sha256=arguments_sha256(call)
    )


def decision_entry(
    call: ToolCall,
    state: Any,
    *,
    by: str | None,
    reason: str | None = None,
    arguments: dict[str, Any] | None = None,
    scope: Any = "call",
) -> ApprovalMessage:
    """An ``"approved"`` or ``"denied"`` entry for ``call``."""
    return ApprovalMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        state=state,
        by=by,
        reason=reason,
        arguments=arguments,
        scope=scope,
        arguments_sha256=arguments_sha256(call),
    )


def _asks(rule: Any, call: ToolCall, of_tool: bool) -> str | None:
    """Why ``rule`` makes ``call`` wait, or None when it does not. A tool's own rule is given the arguments; the
    turn's policy the whole call. A rule that raises makes the call wait (with the failure as its reason): when in
    doubt, a person decides."""
    if rule is None or rule is False:
        return None
    if rule is True:
        return f"{call.name} needs approval"
    try:
        answer = rule(call.arguments) if of_tool else rule(call)
    except Exception as exc:
        return f"the approval rule of {call.name} failed ({describe_exception(exc)}): a person decides"
    if isinstance(answer, str):
        return answer or None
    return f"{call.name} needs approval" if answer else None
