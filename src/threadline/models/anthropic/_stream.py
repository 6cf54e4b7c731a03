"""A streamed Messages API answer: `MessageStream` reads the events into text and thinking deltas, assembled tool
calls and thinking blocks, usage and the stop reason, then the whole answer (`response_from`, shared with the
non-streamed reading)."""

from __future__ import annotations

from typing import Any

import msgspec

from ...errors import ModelError
from ...message_types import (
    Reasoning,
    Usage,
)
from ..base import ModelResponse, ReasoningDelta
from ..http._convert_common import (
    PARAGRAPH_BREAK,
    StreamReader,
    WireContext,
    parse_arguments,
    too_deep_to_read,
)
from ._response import (
    WireBlock,
    WireOutputDetails,
    WireUsage,
    bad_response,
    decode_event,
    error_from,
    response_from,
    unknown_block,
    unsigned,
    usage_from,
)
from ._thinking import (
    PROVIDER,
    ReasoningOrder,
)

__all__ = ["MessageStream"]


class MessageStream(StreamReader):
    """Reads one streamed message, event by event.

    Feed each SSE event to `feed`, which returns the text to show, a `ReasoningDelta` for a piece of thinking, or
    None; `finish` then gives the complete `ModelResponse`. Tool inputs are put together from their
    ``input_json_delta`` fragments; the final-result tool's fragments are shown as text, since they are the answer.
    Thinking blocks are put together from ``thinking_delta`` and ``signature_delta``; a redacted one arrives whole.
    """

    __slots__ = (
        "_apart",
        "_cache_read",
        "_cache_write",
        "_input",
        "_model",
        "_order",
        "_output",
        "_thinking",
        "_thoughts",
    )
    _usage: WireUsage | None  # the slot StreamReader keeps, holding this API's usage struct

    def __init__(self, context: WireContext) -> None:
        super().__init__(context)
        # Token counts from ``message_delta``, which win over those of ``message_start``.
        self._output: int | None = None
        self._input: int | None = None
        self._thinking: int | None = None
        self._cache_read: int | None = None
        self._cache_write: int | None = None
        # Thinking blocks by stream index: [part number, text pieces, signature pieces, redacted data].
        self._thoughts: dict[int, list[Any]] = {}
        self._order = ReasoningOrder()
        self._model: Any = None  # the model id message_start names
        self._apart = False  # a block other than text came after the last text (see PARAGRAPH_BREAK)

    def feed(self, event: str, data: str) -> str | ReasoningDelta | None:
        """Take one event; return the text or thinking it adds, if any.

        Raises:
            ModelError: for an ``error`` event, an unreadable one, or a block or delta of an unknown type.
        """
        try:
            item = decode_event(data)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            raise ModelError(f"Anthropic sent an unreadable stream event: {exc}", type="bad_response") from None
        except RecursionError:
            raise too_deep_to_read("a stream event of Anthropic") from None
        kind = item.type or event
        if kind == "content_block_delta":
            delta = item.delta
            if delta is None:
                return None
            delta_type = delta.type
            if delta_type == "text_delta":
                return self._text(delta.text) if delta.text else None
            if delta_type == "input_json_delta":
                if delta.partial_json:
                    block = self._calls.get(item.index)
                    if block is not None:
                        block[2].append(delta.partial_json)
                        if block[1] == self._context.final_tool:
                            return delta.partial_json
                return None
            if delta_type == "thinking_delta" or delta_type == "signature_delta":
                thought = self._thoughts.get(item.index)
                if thought is None:
                    raise bad_response(f"a {delta_type} for block {item.index}, which is not a thinking block")
                if delta_type == "signature_delta":
                    if delta.signature:
                        thought[2].append(delta.signature)
                    return None
                if delta.thinking:
                    thought[1].append(delta.thinking)
                    return ReasoningDelta(delta.thinking, part=thought[0], provider=PROVIDER)
                return None
            if delta_type == "citations_delta":
                return None  # a citation of the text block's text: the text is kept, citations are not (as unstreamed)
            raise bad_response(f"a content_block_delta of a type threadline does not know ({delta_type!r})")
        if kind == "content_block_start":
            start = item.content_block
            if start is not None:
                return self._start(start, item.index)
            return None
        if kind == "message_delta":
            if item.delta is not None and item.delta.stop_reason is not None:
                self._stop = item.delta.stop_reason
            usage = item.usage
            if usage is not None:
                self._output = usage.output_tokens if usage.output_tokens is not None else self._output
                if usage.input_tokens is not None:
                    self._input = usage.input_tokens
                if usage.output_tokens_details is not None:
                    self._thinking = usage.output_tokens_details.thinking_tokens
                # message_delta's counts are cumulative: where it gives the cache counts, they are the final ones.
                if usage.cache_read_input_tokens is not None:
                    self._cache_read = usage.cache_read_input_tokens
                if usage.cache_creation_input_tokens is not None:
                    self._cache_write = usage.cache_creation_input_tokens
            return None
        if kind == "message_start":
            if item.message is not None:
                self._usage = item.message.usage
                self._model = item.message.model
            return None
        if kind == "message_stop":
            self.done = True
            return None
        if kind == "error":
            raise error_from(item.error)
        return None  # ping, content_block_stop, and event types added after this was written

    def _text(self, text: str) -> str:
        """Keep a piece of the answer's text; return what to show (after a separator, when a block other than text
        came since the text before it)."""
        if self._apart:
            self._apart = False
            text = PARAGRAPH_BREAK + text
        self._parts.append(text)
        self._order.text()
        return text

    def _start(self, start: WireBlock, index: int) -> str | ReasoningDelta | None:
        kind = start.type
        if kind != "text":
            self._apart = bool(self._parts)
        if kind == "tool_use":
            self._calls[index] = [start.id, start.name or "", []]
            self._order.tool()
        elif kind == "text":
            if start.text:
                return self._text(start.text)
        elif kind == "thinking":
            part = self._order.add()
            text = start.thinking or ""
            self._thoughts[index] = [part, [text], [start.signature or ""], None]
            if text:
                return ReasoningDelta(text, part=part, provider=PROVIDER)
        elif kind == "redacted_thinking":
            if not start.data:
                raise bad_response(f"a redacted_thinking block without data (block {index})")
            self._thoughts[index] = [self._order.add(), [], [], start.data]
        else:
            raise unknown_block(kind, index)
        return None

    def finish(self) -> ModelResponse:
        """The complete response.

        Raises:
            ModelError: when the stream ended before the message was complete (a cut stream), or a thinking block
                came without its signature.
        """
        uses = [(call_id, name, *parse_arguments(text)) for call_id, name, text in self._complete_calls()]
        reasoning: list[Reasoning] = []
        for index, (_, pieces, signature, redacted) in sorted(self._thoughts.items()):
            if redacted is not None:
                reasoning.append(Reasoning(redacted=redacted, provider=PROVIDER))
                continue
            joined = "".join(signature)
            if not joined:
                raise unsigned(index)
            reasoning.append(Reasoning(text="".join(pieces), signature=joined, provider=PROVIDER))
        if reasoning:
            self._order.place(reasoning, bool(self._parts))
        return response_from(self._parts, uses, self._stop, self.usage_so_far(), self._context, reasoning, self._model)

    def usage_so_far(self) -> Usage | None:
        """The usage the stream has reported: ``message_start``'s counts with ``message_delta``'s over them (the
        final ones once the stream is whole; a cut stream's failure is logged with what came)."""
        if self._usage is None and self._output is None and self._input is None:
            return None
        usage = msgspec.structs.replace(self._usage) if self._usage is not None else WireUsage()
        if self._output is not None:
            usage.output_tokens = self._output
        if self._input is not None:
            usage.input_tokens = self._input
        if self._thinking is not None:
            usage.output_tokens_details = WireOutputDetails(thinking_tokens=self._thinking)
        if self._cache_read is not None:
            usage.cache_read_input_tokens = self._cache_read
        if self._cache_write is not None:
            usage.cache_creation_input_tokens = self._cache_write
        return usage_from(usage)
