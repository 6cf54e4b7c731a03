"""A small OTLP/HTTP trace receiver on 127.0.0.1, for the end-to-end tests of ``--otlp`` and `export_otlp`.

It accepts what an OpenTelemetry collector's OTLP/HTTP receiver accepts on ``POST /v1/traces``: an
``ExportTraceServiceRequest`` in binary protobuf (``Content-Type: application/x-protobuf``, optionally gzip), and
answers ``200`` with an ``ExportTraceServiceResponse``, as the OTLP specification's HTTP transport says. The messages
are decoded with the official ``opentelemetry-proto`` package, so what a test reads is what a real back end
(Jaeger's, Phoenix's OTLP endpoint) would have received. The raw bodies are kept, to search them for secrets.
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def value_of(value: AnyValue) -> Any:
    """A protobuf ``AnyValue`` as a Python value."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(value_of(item) for item in value.array_value.values)
    if kind is None:
        return None
    return getattr(value, kind)


@dataclass
class ReceivedSpan:
    """One span as the receiver decoded it."""

    name: str
    trace_id: bytes
    span_id: bytes
    parent_span_id: bytes
    kind: int
    attributes: dict[str, Any]
    status_code: int
    status_message: str
    events: list[tuple[str, dict[str, Any]]]
    start: int = 0
    resource: dict[str, Any] = field(default_factory=dict)


class OTLPReceiver:
    """The receiver: `url` is its traces endpoint, `spans` what it has received so far."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.paths: list[str] = []
        self.spans: list[ReceivedSpan] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_response(404 if self.path != "/v1/traces" else 415)
                    self.end_headers()
                    return
                receiver.receive(self.path, body)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.root = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.root}/v1/traces"
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-receiver", daemon=True)
        self._thread.start()

    def receive(self, path: str, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        found = []
        for resource_spans in request.resource_spans:
            resource = {item.key: value_of(item.value) for item in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(
                        ReceivedSpan(
                            name=span.name,
                            trace_id=span.trace_id,
                            span_id=span.span_id,
                            parent_span_id=span.parent_span_id,
                            kind=span.kind,
                            attributes={item.key: value_of(item.value) for item in span.attributes},
                            status_code=span.status.code,
                            status_message=span.status.message,
                            events=[
                                (event.name, {item.key: value_of(item.value) for item in event.attributes})
                                for event in span.events
                            ],
                            start=span.start_time_unix_nano,
                            resource=resource,
                        )
                    )
        with self._lock:
            self.paths.append(path)
            self.bodies.append(body)
            self.spans.extend(found)

    def named(self, name: str) -> list[ReceivedSpan]:
        return [span for span in self.spans if span.name == name]

    def children(self, parent: ReceivedSpan) -> list[ReceivedSpan]:
        """Direct children of ``parent``, in the order they started."""
        found = [span for span in self.spans if span.parent_span_id == parent.span_id]
        return sorted(found, key=lambda span: span.start)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
