"""A streamed Chat Completions answer: `ChatStream` reads ``chat.completion.chunk`` events into text deltas,
reasoning deltas and tool calls assembled from their fragments, then the complete `ModelResponse`."""

from __future__ import annotations

from typing import Any

from ...message_types import (
    Reasoning,
)
from ..base import ModelResponse, ReasoningDelta
from ..http._convert_common import (
    StreamReader,
    WireContext,
    served_model,
)
from ..http._reasoning_details import PROVIDER as DETAILS
from ..http._reasoning_details import DetailsStream
from ..http._think_tags import ThinkTags
from ._chat_response import (
    WireToolCall,
    WireUsage,
    calls_from,
    decode_body,
    error_from,
    signature_of,
    thinking_of,
    usage_from,
)

__all__ = ["ChatStream"]


class ChatStream(StreamReader):
    """Reads one streamed completion, event by event.

    Feed each SSE ``data`` field to `feed`, which returns the text to show, a `ReasoningDelta` for a piece of
    thinking, or None; `finish` then gives the complete `ModelResponse`. Tool-call fragments are put together by
    their ``index``; the final-result tool's argument fragments are shown as text, since they are the answer.

    Thinking accumulates into one `Reasoning` part while it comes before the answer, as it does on every server
    known; thinking that resumes after text or a tool call starts a new part that records its ``position``. A
    chunk that carries both thinking and text (a server's chunk at the end of the thinking) returns the thinking,
    and its text is shown with the next text (or, when none follows, as the whole answer at the end).
    """

    __slots__ = ("_details", "_held", "_mark", "_model", "_signatures", "_tags", "_thinking")
    _usage: WireUsage | None  # the slot StreamReader keeps, holding this API's usage struct

    def __init__(self, context: WireContext) -> None:
        super().__init__(context)
        # A <think> block opening the text, while no thinking field has come (see _think_tags).
        self._tags: ThinkTags | None = ThinkTags() if context.think_tags else None
        # Reasoning parts: (position, pieces); position None: it came before the whole answer.
        self._thinking: list[tuple[int | None, list[str]]] = []
        self._mark = 0  # how many parts the answer had when the open reasoning part last grew
        self._held = ""  # text of a chunk that also carried thinking, not shown yet
        self._signatures: dict[int, str] = {}  # Gemini's thought signatures, by the index of their call
        self._details = DetailsStream()  # OpenRouter's reasoning_details, which win over plain thinking
        self._model: Any = None  # the model id the chunks name

    def feed(self, event: str, data: str) -> str | ReasoningDelta | None:
        """Take one event; return the text it adds, the thinking it adds, or None.

        Raises:
            ModelError: for an error event or an unreadable chunk.
        """
        if data == "[DONE]":
            self.done = True
            return None
        chunk = decode_body(data)
        if chunk.error is not None:
            raise error_from(chunk.error)
        if chunk.usage is not None:
            self._usage = chunk.usage
        if chunk.model is not None:
            self._model = chunk.model
        if not chunk.choices:
            return None
        choice = chunk.choices[0]
        if choice.finish_reason is not None:
            self._stop = choice.finish_reason
        delta = choice.delta
        if delta is None:
            return None
        thinking: ReasoningDelta | None = None
        # OpenRouter sends its thinking twice, as plain text and in entries. What is shown follows the copy that
        # came first: the entries' text (usually in the same chunk as the plain text), or, once plain text was
        # shown, that text to the end, so entries arriving after it are not shown again. The log keeps the entries.
        shown_plain = bool(self._thinking)
        if delta.reasoning_details:
            added = self._details.feed(delta.reasoning_details)
            if added is not None and not shown_plain:
                thinking = ReasoningDelta(added[0], part=added[1], provider=DETAILS)
        if thinking is None and (shown_plain or not self._details.readable):
            thought = thinking_of(delta)
            thinking = self._think(thought) if thought is not None else None
        text = delta.content or delta.refusal
        tags = self._tags
        if tags is not None:
            if (thinking is not None or self._thinking or self._details.readable) and not tags.opened:
                tags = self._tags = None  # the server sends its thinking apart: the text is all answer
            elif delta.content:
                thought, text = tags.feed(delta.content)
                if thought:
                    thinking = self._think(thought)
        if text:
            self._parts.append(text)
        if delta.tool_calls:
            final = self._context.final_tool
            for fragment in delta.tool_calls:
                index, slot = self._slot(fragment)
                signature = signature_of(fragment.extra_content)
                if signature is not None:
                    self._signatures.setdefault(index, signature)
                if fragment.id and not slot[0]:
                    slot[0] = fragment.id  # the first id stands: some servers repeat it in every chunk
                function = fragment.function
                if function is not None:
                    if function.name:
                        self._take_name(slot, function.name)
                    if function.arguments:
                        slot[2].append(function.arguments)
                        if final is not None and slot[1] == final:
                            text = (text or "") + function.arguments
        if thinking is not None:
            if text:
                self._held += text
            return thinking
        if text and self._held:
            text, self._held = self._held + text, ""
        return text or None

    def _think(self, text: str) -> ReasoningDelta:
        """Add a piece of thinking to the open part, or start a part when the answer went on since the last piece."""
        thinking = self._thinking
        answered = (1 if self._parts else 0) + len(self._calls)  # the answer's parts so far: its text, its calls
        if thinking and answered == self._mark:
            thinking[-1][1].append(text)
        else:
            # Its place among the answer's parts: after every earlier reasoning part and what was answered so far.
            thinking.append((len(thinking) + answered if answered else None, [text]))
            self._mark = answered
        return ReasoningDelta(text, part=len(thinking) - 1, provider="openai")

    def _slot(self, fragment: WireToolCall) -> tuple[int, list[Any]]:
        """The call a fragment belongs to, and its index: by the fragment's ``index``; without one, by its id, else
        the call in progress."""
        calls = self._calls
        index = fragment.index
        if index is None:
            # Servers that leave the index out: a fragment with a new id starts a call, one with a known id
            # continues that call, and one with neither continues the last call.
            if fragment.id:
                index = next((key for key, slot in calls.items() if slot[0] == fragment.id), None)
            elif calls:
                index = max(calls)
            if index is None:
                index = max(calls, default=-1) + 1
        slot = calls.get(index)
        if slot is None:
            slot = calls[index] = [None, "", []]
        return index, slot

    def _take_name(self, slot: list[Any], name: str) -> None:
        """Take a call's name once: servers such as llama-cpp-python's repeat it in every chunk.

        A name that differs from one already taken is a continuation only while what was taken names no offered
        tool, for a server that streams the name in pieces.
        """
        taken = slot[1]
        if not taken:
            slot[1] = name
        elif name != taken and taken not in self._context.wire_names:
            slot[1] = taken + name

    def finish(self) -> ModelResponse:
        """The complete response.

        Raises:
            ModelError: when the stream ended before the server said it was complete (a cut stream).
        """
        if self._tags is not None:
            thought, text = self._tags.end()
            if thought:
                self._think(thought)
            if text:
                self._parts.append(text)
        signatures = [self._signatures.get(index) for index in sorted(self._calls)]  # the order of the calls
        calls, final_text, signed = calls_from(self._complete_calls(), self._context, signatures)
        content: str | None = "".join(self._parts) or None
        stop = self._stop
        if final_text is not None:
            content, calls, stop = final_text, [], "stop"
        reasoning = (
            []
            if self._details.readable
            else [
                Reasoning(text="".join(pieces), provider="openai", position=position)
                for position, pieces in self._thinking
            ]
        )
        reasoning.extend(self._details.pieces())
        reasoning.extend(signed)
        return ModelResponse(
            content=content,
            tool_calls=calls,
            usage=usage_from(self._usage),
            stop_reason=stop,
            reasoning=reasoning,
            response_model=served_model(self._model),
        )
