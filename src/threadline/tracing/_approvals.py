"""What the spans of `_otel` say of tool calls that wait (docs/architecture.md#tool-calls-that-wait).

- Every approval entry a turn records is an event on its ``invoke_agent`` span, at the entry's own time:
  ``threadline.approval.requested`` (a call waits: for a person, ``kind=approval``, or for a result from outside,
  ``kind=external``) and ``threadline.approval.approved`` (a call approved by rule, ``by=rule``, for a tool approved
  for the rest of the conversation). Attributes: ``gen_ai.tool.call.id``, ``gen_ai.tool.name``,
  ``threadline.approval.kind``, ``threadline.approval.state``, ``threadline.approval.by`` (when known) and
  ``threadline.approval.scope`` (``conversation`` only); the reason (``threadline.approval.reason``) and edited
  arguments (``threadline.approval.arguments``) are content: only with ``include_content=True``, scrubbed like
  every other content.
- A decision made between turns (`Conversation.approve`, ``deny``, ``submit_result``) is a short span of its own,
  ``approve <tool>``, ``deny <tool>`` or ``submit_result <tool>`` (INTERNAL), with ``gen_ai.conversation.id`` and
  the same attributes (a submitted result adds ``threadline.tool.result.is_error``), carrying the same event
  (``threadline.approval.approved``, ``.denied``, ``.submitted``). It is the child of the span current where the
  decision is made (a web framework's request span, say) and a root span when there is none: a person's decision
  is an operation of its own, often made in another process than the turns, and a back end that groups spans by
  ``gen_ai.conversation.id`` (a session) shows it there, between the turn that asked and the turn that acts on it.
- The turn that acts on decisions (`Conversation.resume`) runs each approved call in an ``execute_tool`` span with
  ``threadline.tool.approved=true``. A tool that raises `ApprovalRequired` ends its ``execute_tool`` span without
  an error: ``threadline.tool.awaiting=approval`` says the call waits, and the turn's event says why.
- A turn that ends with calls waiting has ``threadline.turn.stop_reason=awaiting``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind

from ..message_types import ApprovalMessage, ToolMessage
from ._attributes import CONVERSATION_ID, TOOL_CALL_ID, TOOL_NAME, TOOL_RESULT, log_secrets
from .content import dumps, scrub, scrub_value

__all__ = ["APPROVED", "AWAITING", "approval_event", "decision_span", "time_ns"]

AWAITING = "threadline.tool.awaiting"
APPROVED = "threadline.tool.approved"
EVENT = "threadline.approval."

# The span name of a decision made between turns, by what was recorded.
_OPERATIONS = {"approved": "approve", "denied": "deny"}


def approval_event(message: ApprovalMessage, secrets: tuple[str, ...] | None) -> tuple[str, dict[str, Any]]:
    """The event name and attributes of one approval entry; ``secrets`` None: no content (no reason, no edited
    arguments), else the values masked in them."""
    attributes: dict[str, Any] = {
        TOOL_CALL_ID: message.tool_call_id,
        TOOL_NAME: message.tool_name,
        "threadline.approval.kind": message.kind,
        "threadline.approval.state": message.state,
    }
    if message.by:
        attributes["threadline.approval.by"] = scrub(message.by, secrets or ())
    if message.scope != "call":
        attributes["threadline.approval.scope"] = message.scope
    if secrets is not None:
        if message.reason:
            attributes["threadline.approval.reason"] = scrub(message.reason, secrets)
        if message.arguments is not None:
            try:
                attributes["threadline.approval.arguments"] = dumps(scrub_value(message.arguments, secrets))
            except Exception:  # tracing never fails a turn
                pass
    return EVENT + message.state, attributes


def time_ns(moment: datetime) -> int | None:
    """A message's time as OpenTelemetry's nanoseconds since the epoch (None: now)."""
    try:
        return int(moment.timestamp() * 1_000_000) * 1000
    except (AttributeError, OverflowError, ValueError, OSError):
        return None


def decision_span(
    tracer: trace.Tracer, host: Any, message: ApprovalMessage | ToolMessage, include_content: bool
) -> None:
    """The span of a decision made between turns on ``host`` (a conversation's): ``message`` is the decision
    entry (approve, deny) or the submitted result (submit_result)."""
    secrets = log_secrets(host) if include_content else None
    if isinstance(message, ApprovalMessage):
        name, attributes = approval_event(message, secrets)
        operation = _OPERATIONS.get(message.state, message.state)
    else:
        operation = "submit_result"
        name = EVENT + "submitted"
        attributes = {
            TOOL_CALL_ID: message.tool_call_id,
            TOOL_NAME: message.tool_name,
            "threadline.approval.kind": "external",
            "threadline.tool.result.is_error": message.is_error,
        }
        if secrets is not None:
            attributes[TOOL_RESULT] = scrub(message.content, secrets)
    conversation_id = getattr(host, "id", None)
    span_attributes = dict(attributes)
    if isinstance(conversation_id, str):
        span_attributes[CONVERSATION_ID] = conversation_id
    span = tracer.start_span(f"{operation} {message.tool_name}", kind=SpanKind.INTERNAL, attributes=span_attributes)
    try:
        span.add_event(name, attributes, timestamp=time_ns(message.created_at))
    finally:
        span.end()
