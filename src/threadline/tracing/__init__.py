"""Tracing: every turn of the process as OpenTelemetry GenAI spans (the ``otel`` extra).

    import threadline
    threadline.instrument()              # spans go to the global tracer provider
    threadline.instrument(tracer_provider=provider, include_content=True)
    threadline.uninstrument()

What the spans hold is described in `threadline.tracing._otel`; `threadline.tracing.otlp` sends them to an OTLP/HTTP
endpoint (Phoenix, Jaeger, Langfuse, an OpenTelemetry collector) for programs that set up no tracing of their own.

Importing this package imports no OpenTelemetry: only `instrument` does.
"""

from __future__ import annotations

from typing import Any

from ..errors import UserError
from . import hooks

__all__ = ["instrument", "is_instrumented", "uninstrument"]

_MISSING_API = "threadline.instrument() needs the OpenTelemetry API: pip install 'threadline[otel]'"


def instrument(tracer_provider: Any = None, include_content: bool = False) -> None:
    """Trace every turn of this process (conversations, ``generate_text``, runs, sub-agents) as OpenTelemetry spans.

    Each turn becomes an ``invoke_agent threadline`` span, with a ``chat <model>`` span per model call and an
    ``execute_tool <name>`` span per tool call, named and annotated as OpenTelemetry's GenAI semantic conventions
    say (``gen_ai.*`` attributes: provider, models, token usage, finish reasons, tool names and call ids;
    ``error.type`` and an ERROR status for what failed; retries as events). Tool calls that wait for a person's
    decision or a result from outside are events on their turn's span (``threadline.approval.*``), and a decision
    made between turns (``Conversation.approve``, ``deny``, ``submit_result``) is a short span of its own
    (`threadline.tracing._approvals` says what each holds). Calling it again replaces the settings.

    Args:
        tracer_provider: The OpenTelemetry ``TracerProvider`` to use (None: the global one, as set by
            ``opentelemetry.trace.set_tracer_provider`` or an OpenTelemetry distro).
        include_content: Also record the messages sent and received, tool arguments and results (the
            conventions' opt-in ``gen_ai.input.messages`` / ``gen_ai.output.messages`` and
            ``gen_ai.tool.call.*``), and the error texts of failed model calls and tools (a server's may quote the
            request; without content a failed model call is described by its error type and HTTP status). API keys,
            key-shaped text and the values of secret-named tool arguments, wherever they are repeated, are masked
            either way.

    Raises:
        UserError: when ``opentelemetry-api`` is not installed.
    """
    try:
        from ._otel import OtelTracer
    except ImportError as exc:
        if (exc.name or "").startswith("opentelemetry"):
            raise UserError(_MISSING_API) from None
        raise
    hooks.tracer = OtelTracer(tracer_provider, include_content=bool(include_content))


def uninstrument() -> None:
    """Stop tracing: turns that start from now on make no spans (those running finish theirs)."""
    hooks.tracer = None


def is_instrumented() -> bool:
    """Whether `instrument` is in effect."""
    return hooks.tracer is not None
