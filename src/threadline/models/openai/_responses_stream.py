"""A streamed Responses API answer: `ResponsesStream` reads the events into text and reasoning deltas, then the
whole answer (`answer_from`, shared with the non-streamed reading)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from ...errors import ModelError
from ..base import ModelResponse, ReasoningDelta
from ..http._convert_common import (
    PARAGRAPH_BREAK,
    StreamReader,
    too_deep_to_read,
)

if TYPE_CHECKING:
    pass

from ._responses_request import ResponsesContext
from ._responses_response import (
    SKIPPED_EVENTS,
    WireError,
    WireItem,
    WireResponse,
    answer_from,
    decode_event,
    error_from,
)

__all__ = ["ResponsesStream"]


class ResponsesStream(StreamReader):
    """Reads one streamed response, event by event.

    Feed each SSE event to `feed`, which returns the text to show, a `ReasoningDelta` for a piece of a reasoning
    summary, or None; `finish` then gives the complete `ModelResponse`, read from the complete items of
    ``response.output_item.done`` (encrypted reasoning included), else from the output of ``response.completed``.
    The final-result tool's argument fragments are shown as text, since they are the answer.
    """

    __slots__ = ("_done_items", "_names", "_part_numbers", "_response", "_text_item", "_wire")

    def __init__(self, context: ResponsesContext) -> None:
        super().__init__(context)
        self._wire = context  # the base class keeps it as a plain `WireContext`
        self._done_items: dict[int, WireItem] = {}
        self._names: dict[int, str] = {}  # function-call names by output index, from output_item.added
        # (output index, summary index, or -1 - content index for raw reasoning text) -> reasoning part
        self._part_numbers: dict[tuple[int, int], int] = {}
        self._response: WireResponse | None = None
        self._text_item: int | None = None  # the output index of the message item the last text came from

    def feed(self, event: str, data: str) -> str | ReasoningDelta | None:
        """Take one event; return the text or the reasoning it adds, if any.

        What carries nothing is ignored: events after the response is done (a ``data: [DONE]`` that proxies and
        compatible servers add), empty data (``event: keepalive``), and data that is not JSON under an event name
        that is not the API's (``event: ping`` / ``data: ping``).

        Raises:
            ModelError: for an ``error`` or ``response.failed`` event, or an unreadable one that may have carried
                part of the answer (JSON cut short, or an event of the API's own).
        """
        if self.done or event in SKIPPED_EVENTS or not data or data == "[DONE]":
            return None
        try:
            item = decode_event(data)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            if data.lstrip().startswith("{") or event.startswith("response.") or event == "error":
                raise ModelError(f"OpenAI sent an unreadable stream event: {exc}", type="bad_response") from None
            return None  # a keepalive of a proxy or server in between: nothing of the answer was in it
        except RecursionError:
            raise too_deep_to_read("a stream event of the Responses API") from None
        kind = item.type or event
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            delta = item.delta
            if not delta:
                return None
            if self._text_item != item.output_index:
                if self._text_item is not None:
                    delta = PARAGRAPH_BREAK + delta  # a new message item: a new paragraph, as `answer_from` joins them
                self._text_item = item.output_index
            self._parts.append(delta)
            return delta
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            if not item.delta:
                return None
            numbers = self._part_numbers
            summary = kind == "response.reasoning_summary_text.delta"
            key = (item.output_index, item.summary_index if summary else -1 - item.content_index)
            part = numbers.get(key)
            if part is None:
                part = numbers[key] = len(numbers)
            return ReasoningDelta(item.delta, part=part, provider=self._wire.origin)
        if kind == "response.function_call_arguments.delta":
            final = self._context.final_tool
            if final is not None and item.delta and self._names.get(item.output_index) == final:
                return item.delta
            return None
        if kind == "response.output_item.added":
            if item.item is not None and item.item.type == "function_call":
                self._names[item.output_index] = item.item.name or ""
            return None
        if kind == "response.output_item.done":
            if item.item is not None:
                self._done_items[item.output_index] = item.item
            return None
        if kind in ("response.completed", "response.incomplete"):
            self._response = item.response or WireResponse(status="completed")
            self.done = True
            return None
        if kind == "response.failed":
            raise error_from(item.response.error if item.response is not None else None)
        if kind == "error":
            raise error_from(
                item.error or WireError(message=item.message, code=item.code), "the stream reported an error"
            )
        return None  # created, in_progress, part and .done events, and event types added after this was written

    def finish(self) -> ModelResponse:
        """The complete response.

        Raises:
            ModelError: when the stream ended without ``response.completed`` (a cut stream), or for what
                `parse_response` refuses.
        """
        response = self._response
        if response is None:
            raise ModelError("the stream ended before the answer was complete", type="stream_cut", retryable=True)
        done = self._done_items
        items = [done[index] for index in sorted(done)] if done else response.output or []
        # The text shown is the answer; it is only absent when no text delta came at all.
        return answer_from(response, items, self._wire, "".join(self._parts) or None)
