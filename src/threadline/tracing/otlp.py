"""Send threadline's spans to an OTLP/HTTP endpoint, for programs that set up no OpenTelemetry of their own (the
``threadline`` command's ``--otlp``, a script).

    from threadline.tracing.otlp import export_otlp
    with export_otlp("http://localhost:6006/v1/traces"):    # Phoenix; Jaeger: http://localhost:4318/v1/traces
        ...                                                 # every turn here is traced and sent

It needs the OpenTelemetry SDK and its OTLP/HTTP exporter (``opentelemetry-sdk``,
``opentelemetry-exporter-otlp-proto-http``): the ``otlp`` extra installs them (the ``otel`` extra, in ``all``, is
the API alone, since an application that traces chooses its SDK). A program that already has a tracer provider
calls `threadline.instrument` instead.
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from ..errors import UserError
from . import hooks, instrument

__all__ = ["MISSING_SDK", "OTLPExport", "export_otlp", "traces_url"]

MISSING_SDK = (
    "sending spans over OTLP needs the OpenTelemetry SDK and its OTLP/HTTP exporter: "
    "pip install 'threadline[otlp]' (opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http)"
)
_TRACES_PATH = "/v1/traces"


class OTLPExport:
    """threadline instrumented with a tracer provider of its own that sends spans to an OTLP/HTTP endpoint.

    `close` (or leaving the ``with`` block) stops tracing and sends what is left before it returns; `unsent` then
    says how many spans the endpoint never took (it was down, say).

    Attributes:
        url: Where the spans go (None: the exporter's default, ``http://localhost:4318/v1/traces``).
    """

    def __init__(self, provider: Any, flush_timeout: float, url: str | None = None, tally: Any = None) -> None:
        self.provider = provider
        self.url = url
        self._tally = tally
        self._tracer = hooks.tracer
        self._flush_timeout = flush_timeout
        self._closed = False

    @property
    def unsent(self) -> int:
        """How many spans could not be sent so far (each export is retried until the timeout first)."""
        return int(self._tally.unsent) if self._tally is not None else 0

    @property
    def refused_status(self) -> int | None:
        """The HTTP status with which the endpoint last refused spans (400 from a server that is not an OTLP/HTTP
        traces endpoint, say), or None when nothing was refused that way (sent, or no answer at all)."""
        return self._tally.refused_status if self._tally is not None else None

    def close(self) -> None:
        """Stop tracing, send the spans not sent yet (waiting at most the flush timeout), and shut down."""
        if self._closed:
            return
        self._closed = True
        if hooks.tracer is self._tracer:  # leave a later instrument() of someone else in place
            hooks.tracer = None
        self.provider.force_flush(int(self._flush_timeout * 1000))
        self.provider.shutdown()

    def __enter__(self) -> OTLPExport:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def export_otlp(
    endpoint: str | None = None,
    *,
    include_content: bool = False,
    service_name: str = "threadline",
    timeout: float = 5.0,
) -> OTLPExport:
    """Trace every turn from now on and send the spans to an OTLP/HTTP endpoint (in batches, in the background).

    Args:
        endpoint: The traces URL (``http://localhost:4318/v1/traces``); a URL without a path gets ``/v1/traces``.
            None: the standard environment variables say where (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, or
            ``OTEL_EXPORTER_OTLP_ENDPOINT`` plus ``/v1/traces``).
        include_content: Record messages and tool arguments and results (see `threadline.instrument`).
        service_name: The ``service.name`` of the spans (``OTEL_SERVICE_NAME`` wins when set).
        timeout: Seconds each export, and the final flush, may take.

    Returns:
        The running export; close it (or use it as a context manager) to send what is left.

    Raises:
        UserError: for an endpoint that is not an http(s) URL, or when the SDK or the exporter is not installed.
    """
    url = traces_url(endpoint)
    try:
        import requests
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    except ImportError:
        raise UserError(MISSING_SDK) from None

    class Tally(SpanExporter):
        """The OTLP exporter, counting the spans it could not send, and the HTTP status of the last refusal."""

        def __init__(self, inner: Any) -> None:
            self.inner = inner
            self.unsent = 0
            self.refused_status: int | None = None
            self.last_status: int | None = None  # of this export's last answer (set by the session's hook)

        def answered(self, response: Any, *args: Any, **kwargs: Any) -> None:
            """The session's response hook: the status of the exporter's last request."""
            self.last_status = response.status_code

        def export(self, spans: Any) -> Any:
            self.last_status = None
            result = self.inner.export(spans)
            if result is not SpanExportResult.SUCCESS:
                self.unsent += len(spans)
                if self.last_status is not None and self.last_status >= 400:
                    self.refused_status = self.last_status
            return result

        def shutdown(self) -> None:
            self.inner.shutdown()

        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            return bool(self.inner.force_flush(timeout_millis))

    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": service_name}
    provider = TracerProvider(resource=Resource.create(attributes))
    session = requests.Session()  # the exporter's own; its hook tells a refusal (HTTP 400) from no answer at all
    tally = Tally(OTLPSpanExporter(endpoint=url, timeout=timeout, session=session))
    session.hooks["response"].append(tally.answered)
    provider.add_span_processor(BatchSpanProcessor(tally))
    instrument(tracer_provider=provider, include_content=include_content)
    return OTLPExport(provider, timeout, url or _environment_url(), tally)


def _environment_url() -> str | None:
    """The traces URL the standard environment variables name, as the exporter reads them."""
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    return base.rstrip("/") + _TRACES_PATH if base else None


def traces_url(endpoint: str | None) -> str | None:
    """The URL spans are posted to: ``endpoint`` as given, with ``/v1/traces`` added when it has no path.

    Raises:
        UserError: for something that is not an http(s) URL.
    """
    if endpoint is None:
        return None
    text = endpoint.strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UserError(
            f"the OTLP endpoint must be an http(s) URL such as http://localhost:4318/v1/traces, got {text!r}"
        )
    if parts.path in ("", "/"):
        return text.rstrip("/") + _TRACES_PATH
    return text
