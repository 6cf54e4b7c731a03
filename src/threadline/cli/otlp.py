"""``--otlp URL``: a command's turns sent as OpenTelemetry spans to an OTLP/HTTP endpoint (Phoenix, Jaeger, Langfuse,
a collector), also when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set.

The spans are flushed before the command exits, however it ends: an answer, an error, Ctrl-C. When the endpoint
does not take them (it is down), the command says so in one line at the end, instead of the exporter's warnings
at each retry.
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (the variable OpenTelemetry's GenAI instrumentations
read) records message content too.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..errors import UserError
from ._errors import EXIT_USAGE, CommandError

__all__ = ["otlp_option"]

F = TypeVar("F", bound=Callable[..., Any])

_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_EXPORTER_LOGGER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"


def otlp_option(fn: F) -> F:
    """Add ``--otlp URL`` to a command, and trace the command's turns when it (or the environment) names one."""

    @functools.wraps(fn)
    def wrapper(*args: Any, otlp_url: str | None, **kwargs: Any) -> Any:
        if otlp_url is None and not any(os.environ.get(name) for name in _ENDPOINT_VARIABLES):
            return fn(*args, **kwargs)
        from ..tracing.otlp import export_otlp

        content = os.environ.get(_CONTENT_VARIABLE, "").strip().lower() in ("1", "true", "yes")
        try:
            export = export_otlp(otlp_url, include_content=content)
        except UserError as exc:
            raise CommandError(str(exc), EXIT_USAGE) from None
        # The exporter warns at each retry and again when it gives up; the command says it once, at the end.
        exporter_log = logging.getLogger(_EXPORTER_LOGGER)
        was_disabled, exporter_log.disabled = exporter_log.disabled, True
        try:
            return fn(*args, **kwargs)
        finally:
            try:
                export.close()
            finally:
                exporter_log.disabled = was_disabled
            if export.unsent:
                where = export.url or "the default OTLP endpoint"
                status = export.refused_status
                why = (
                    "(is the receiver running?)"
                    if status is None
                    else f"(it answered HTTP {status}: is this an OTLP/HTTP traces endpoint?)"
                )
                click.echo(
                    f"threadline: {export.unsent} span{'s' if export.unsent != 1 else ''} could not be sent to {where} "
                    + why,
                    err=True,
                )

    option = click.option(
        "--otlp",
        "otlp_url",
        default=None,
        metavar="URL",
        help="Send the turns as OpenTelemetry spans to this OTLP/HTTP endpoint, e.g. http://localhost:4318/v1/traces "
        "(default: $OTEL_EXPORTER_OTLP_ENDPOINT, if set).",
    )
    return option(wrapper)  # type: ignore[return-value]
