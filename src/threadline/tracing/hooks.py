"""The tiny interface through which the engine, the HTTP transport, runs and MCP toolsets report to a tracer.

Core modules read `tracer` (a module global) once per turn, per retry, per run, per MCP call and per decision on a
waiting tool call (`report_decision`): while it is None (nothing instrumented) that one check is all they pay, and
no tracing code is imported. `threadline.instrument` sets it to an OpenTelemetry implementation
(`threadline.tracing._otel`); `threadline.uninstrument` clears it.

Nothing here imports OpenTelemetry.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    # Only leaf modules: the engine, the tools and the toolsets import this module (their types are Any here).
    from ..errors import ModelError
    from ..message_types import ApprovalMessage, LLMError, Message, ToolCall, ToolMessage
    from ..models.base import Model, ModelRequest, ModelResponse

__all__ = ["ChatSpan", "Tracer", "TurnSpan", "report_decision", "tracer"]


class ChatSpan(Protocol):
    """One model call being traced; exactly one of its methods is called, when the call ends."""

    def done(self, response: ModelResponse) -> None:
        """The call answered (after `check_response`)."""
        ...

    def failed(self, error: LLMError, status: int | None = None) -> None:
        """The call failed; ``error`` is what the log records for it, ``status`` the HTTP status the provider
        answered with, if any."""
        ...


class TurnSpan(Protocol):
    """One turn being traced (`threadline.engine.run_turn`)."""

    def chat(self, model: Model, request: ModelRequest) -> ChatSpan:
        """A model call of this turn starts (the call's span is current until it ends)."""
        ...

    async def execute_tool(
        self, call: ToolCall, tools: Mapping[str, Any], default_timeout: float | None
    ) -> ToolMessage:
        """Run one tool call (as `threadline.tools.execute_tool_call` does, with ``tools`` mapping names to `Tool`s)
        inside its span."""
        ...

    def end(self, result: Any, error: BaseException | None) -> None:
        """The turn ended (its `TurnResult` is ``result``): normally (``error`` None) or by ``error``."""
        ...


class Tracer(Protocol):
    """What `tracer` holds while threadline is instrumented."""

    def turn(self, host: Any, model: Model, options: Any) -> TurnSpan:
        """A turn on ``host`` (a `TurnHost`) with ``options`` (its `TurnOptions`) starts."""
        ...

    def retry(self, attempt: int, error: ModelError, delay: float) -> None:
        """The current model call failed (``error``, already redacted) and is tried again in ``delay`` seconds."""
        ...

    def mcp_call(self, tool_name: str, transport: str, url: str | None) -> None:
        """The current tool call goes to an MCP server (``transport``: ``"pipe"`` for stdio, ``"tcp"`` for HTTP)."""
        ...

    def workflow(self, run: Any, steps: AsyncGenerator[Message, None]) -> AsyncGenerator[Message, None]:
        """``steps`` (the messages of a `threadline.runs.Run`) driven inside one workflow span."""
        ...

    def reused(
        self,
        model_name: str,
        request_hash: str,
        how: str,
        started_ns: int,
        conversation_id: str | None = None,
        error: BaseException | None = None,
    ) -> None:
        """A `generate_text` call answered without a model call of its own (``how``: ``"cache"``, a cached result;
        ``"shared"``, another identical call in flight), from ``started_ns`` (`time.time_ns`) until now; ``error``
        when the shared call failed."""
        ...

    def decision(self, host: Any, message: ApprovalMessage | ToolMessage) -> None:
        """A waiting call of ``host`` (a conversation's host) was decided between turns: ``message`` is the
        decision entry recorded (an approval or a denial) or the result submitted for an external call."""
        ...


tracer: Tracer | None = None
"""The active tracer; None while threadline is not instrumented."""


def report_decision(host: Any, message: ApprovalMessage | ToolMessage) -> None:
    """Tell the tracer, if any, of a decision recorded between turns (`Conversation.approve`, ``deny``,
    ``submit_result``); tracing never fails a decision that is already recorded."""
    active = tracer
    if active is None:
        return
    try:
        active.decision(host, message)
    except Exception:
        pass
