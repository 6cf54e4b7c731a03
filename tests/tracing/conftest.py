"""Fixtures of the tracing tests: threadline instrumented with the OpenTelemetry SDK's in-memory exporter.

Each test gets a `Spans` recorder of its own (its own ``TracerProvider``, passed to ``threadline.instrument``), and
threadline is uninstrumented after it, so no test sees another's spans.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import threadline


class Spans:
    """The finished spans of one test, with helpers to walk their tree."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def instrument(self, include_content: bool = False) -> None:
        threadline.instrument(tracer_provider=self.provider, include_content=include_content)

    @property
    def all(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.all if span.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, [span.name for span in self.all]
        return found[0]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        """Direct children of ``parent``, in the order they started."""
        found = [
            span
            for span in self.all
            if span.parent is not None
            and span.parent.span_id == parent.context.span_id
            and span.context.trace_id == parent.context.trace_id
        ]
        return sorted(found, key=lambda span: span.start_time or 0)

    def roots(self) -> list[ReadableSpan]:
        return sorted((span for span in self.all if span.parent is None), key=lambda span: span.start_time or 0)

    def tree(self, root: ReadableSpan) -> list[Any]:
        """``[name, [child trees…]]`` of ``root``: the shape a tracing back end draws."""
        return [root.name, [self.tree(child) for child in self.children(root)]]

    def text(self) -> str:
        """Every name, attribute value, event and status description of every span, as one text to search."""
        pieces: list[str] = []
        for span in self.all:
            pieces.append(span.name)
            pieces.extend(f"{key}={value}" for key, value in (span.attributes or {}).items())
            pieces.append(span.status.description or "")
            for event in span.events:
                pieces.append(event.name)
                pieces.extend(f"{key}={value}" for key, value in (event.attributes or {}).items())
        return "\n".join(pieces)


@pytest.fixture
def spans() -> Iterator[Spans]:
    recorder = Spans()
    recorder.instrument()
    try:
        yield recorder
    finally:
        threadline.uninstrument()
        recorder.provider.shutdown()
