"""Models for tests: `ScriptedModel` plays back a queue of answers and records every request it received.

Example::

    from threadline import llm, ToolCall, AssistantMessage
    from threadline.testing import ScriptedModel

    model = ScriptedModel([
        AssistantMessage(tool_calls=[ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})]),
        "Sunny in Paris.",
    ])
    text = llm.model(model).tools(get_weather).request("Weather?").prompt()
    assert model.requests[1].messages[-1].content == "22 C, sunny"   # the tool result it was sent
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeAlias

import msgspec

from .errors import ModelError
from .message_types import AssistantMessage, Message, ToolCall, Usage
from .models.base import (
    Model,
    ModelCapabilities,
    ModelEvent,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    ReasoningDelta,
    ResponseFormat,
    TextDelta,
    ToolSpec,
)

__all__ = ["ScriptedModel", "ScriptedRequest", "ScriptedResponse"]

ScriptedResponse: TypeAlias = "str | AssistantMessage | BaseException | Callable[[ScriptedRequest], Any]"


@dataclass(frozen=True, slots=True)
class ScriptedRequest:
    """One request as `ScriptedModel` received it.

    Attributes:
        messages: Exactly what was sent, system prefix included.
        tools: Tool specs; ``.name`` is the real name.
        settings: The request's settings.
        tool_choice: The requested tool choice (None means auto).
        response_format: The requested JSON schema, for structured output.
    """

    messages: list[Message]
    tools: list[ToolSpec]
    settings: ModelSettings
    tool_choice: str | None = None
    response_format: ResponseFormat | None = None

    @property
    def tool_names(self) -> list[str]:
        return [spec.name for spec in self.tools]


class ScriptedModel(Model):
    """A model that plays back a queue of responses, for tests.

    Each item is a ``str`` (a final answer, streamed in a few chunks), an `AssistantMessage` (e.g. with
    ``tool_calls``, or ``reasoning``, whose text streams first as `ReasoningDelta` events), an exception instance
    (the call fails with it; a `ModelError` with ``partial`` streams that text first), or a callable
    ``(request) -> one of those`` (sync or async). An empty queue fails the call with a clear `ModelError`.

    Args:
        responses: The queue.
        name: The model name recorded on assistant messages.
        capabilities: What the model claims to support (all of it by default).
        usage: Usage reported with every answer, if given.
    """

    def __init__(
        self,
        responses: Iterable[Any] = (),
        *,
        name: str = "scripted",
        capabilities: ModelCapabilities | None = None,
        usage: Usage | None = None,
    ) -> None:
        self.name = name
        self.capabilities = capabilities or ModelCapabilities(
            tools=True, streaming=True, structured_output=True, images=True, context_length=None, reasoning=True
        )
        self._queue: deque[Any] = deque(responses)
        self._usage = usage
        self.requests: list[ScriptedRequest] = []

    def add(self, *responses: Any) -> ScriptedModel:
        """Queue more responses."""
        self._queue.extend(responses)
        return self

    @property
    def remaining(self) -> int:
        """How many queued responses are left."""
        return len(self._queue)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        recorded = ScriptedRequest(
            messages=list(request.messages),
            tools=list(request.tools),
            settings=request.settings,
            tool_choice=request.tool_choice,
            response_format=request.response_format,
        )
        self.requests.append(recorded)
        if not self._queue:
            raise ModelError(
                f"ScriptedModel has no scripted response left for request {len(self.requests)} "
                f"(it was given {len(self.requests) - 1})",
                type="script_exhausted",
            )
        item = self._queue.popleft()
        while callable(item) and not isinstance(item, (str, AssistantMessage, BaseException)):
            item = item(recorded)
            if inspect.isawaitable(item):
                item = await item
        if isinstance(item, BaseException):
            partial = getattr(item, "partial", "")
            if partial:
                yield TextDelta(partial)
            raise item
        if isinstance(item, str):
            for chunk in _chunks(item):
                yield TextDelta(chunk)
            yield ModelResponse(content=item, stop_reason="stop", usage=self._usage, model=self.name)
            return
        if isinstance(item, AssistantMessage):
            for part, piece in enumerate(item.reasoning):
                for chunk in _chunks(piece.text):
                    yield ReasoningDelta(chunk, part=part, provider=piece.provider)
            if item.content:
                for chunk in _chunks(item.content):
                    yield TextDelta(chunk)
            calls = [
                ToolCall(id=c.id, name=c.name, arguments=dict(c.arguments), raw_arguments=c.raw_arguments)
                for c in item.tool_calls
            ]
            yield ModelResponse(
                content=item.content,
                tool_calls=calls,
                usage=item.usage or self._usage,
                stop_reason="tool_calls" if calls else "stop",
                model=item.model or self.name,
                reasoning=[msgspec.structs.replace(piece) for piece in item.reasoning],
            )
            return
        raise TypeError(
            f"ScriptedModel cannot play {type(item).__name__}: queue str, AssistantMessage, an exception, or a callable"
        )


def _chunks(text: str, parts: int = 3) -> list[str]:
    """Split text into a few pieces at spaces so streaming code paths are exercised."""
    if len(text) < 8:
        return [text] if text else []
    size = max(1, len(text) // parts)
    out: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        space = text.find(" ", end)
        end = len(text) if space == -1 or len(out) == parts - 1 else space + 1
        out.append(text[start:end])
        start = end
    return out
