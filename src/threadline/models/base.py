"""What a model is to threadline: a request, a stream of events, capabilities.

A `Model` receives one `ModelRequest` (messages exactly as they are sent, system prefix included; tool specs with
real names; settings) and yields `TextDelta` events while it streams, then exactly one `ModelResponse`. It raises
`ModelError` when the call fails. Retries, wire names and wire formats are the adapter's business; the turn engine
only sees these types.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, Literal, TypeAlias

import msgspec

from ..errors import CapabilityError
from ..messages import Message, ToolCall, Usage, UserMessage

__all__ = [
    "Model",
    "ModelCapabilities",
    "ModelEvent",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "ResponseFormat",
    "TextDelta",
    "ToolChoice",
    "ToolSpec",
]

ToolChoice: TypeAlias = str  # "auto" | "required" | "none" | a tool's real name


class ModelCapabilities(msgspec.Struct, frozen=True):
    """What a model can do. The engine checks these before sending, never the model's name.

    Attributes:
        tools: Accepts tool specs and returns tool calls.
        streaming: Streams text as it is produced.
        structured_output: Constrains output to a JSON schema natively.
        images: Accepts image attachments in user messages.
        context_length: Context window in tokens, when known.
        tool_choice_required: Honours ``tool_choice="required"`` (call some tool). Without it, ``"required"``
            with one tool offered is sent as that tool's name, and with several is refused (`CapabilityError`).
            A choice naming one tool needs only ``tools``.
    """

    tools: bool = True
    streaming: bool = True
    structured_output: bool = False
    images: bool = False
    context_length: int | None = None
    tool_choice_required: bool = True


class ToolSpec(msgspec.Struct, frozen=True):
    """A tool as offered to a model: real name, description, JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]


class ResponseFormat(msgspec.Struct, frozen=True):
    """A request for output matching a JSON schema (``prompt_for_type``)."""

    name: str
    schema: Mapping[str, Any]


class ModelSettings(msgspec.Struct):
    """Per-request settings.

    Attributes:
        stream: Stream the answer (adapters may still buffer when the provider cannot).
        max_tokens: Upper bound on generated tokens.
        temperature: Sampling temperature.
        timeout: Seconds to wait for the model (per attempt for HTTP providers).
        max_retries: Retries of retryable failures (HTTP providers).
        extras: Provider-prefixed extras, e.g. ``{"openai_seed": 1, "local_top_k": 40}``.
    """

    stream: bool = True
    max_tokens: int | None = None
    temperature: float | None = None
    timeout: float | None = None
    max_retries: int | None = None
    extras: dict[str, Any] = msgspec.field(default_factory=dict)

    def extras_for(self, prefix: str) -> dict[str, Any]:
        """The extras of one provider with their prefix removed (``openai_seed`` -> ``seed``)."""
        start = prefix + "_"
        return {key[len(start) :]: value for key, value in self.extras.items() if key.startswith(start)}


class ModelRequest(msgspec.Struct):
    """Everything a model is sent for one call.

    Attributes:
        messages: The messages exactly as sent, system prefix included.
        tools: Tool specs, by real name.
        tool_choice: ``"auto"``, ``"required"``, ``"none"`` or a tool's real name; None means auto.
        settings: Sampling and transport settings.
        response_format: Set when structured output is requested.
    """

    messages: list[Message]
    tools: list[ToolSpec] = msgspec.field(default_factory=list)
    tool_choice: ToolChoice | None = None
    settings: ModelSettings = msgspec.field(default_factory=ModelSettings)
    response_format: ResponseFormat | None = None


class TextDelta(msgspec.Struct, frozen=True):
    """A piece of streamed answer text."""

    text: str


StopReason: TypeAlias = Literal["stop", "tool_calls", "length", "content_filter", "error"] | str


class ModelResponse(msgspec.Struct):
    """The complete result of one model call; the last event of a stream."""

    content: str | None
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    usage: Usage | None = None
    stop_reason: StopReason | None = None
    model: str | None = None


ModelEvent: TypeAlias = TextDelta | ModelResponse


class Model(ABC):
    """A model threadline can call. Subclass it, or use one by name with `threadline.get_model`.

    Attributes:
        name: The name the model answers to (e.g. ``"openai:gpt-4o-mini"``); recorded on assistant messages.
        capabilities: What the model can do.
    """

    name: str = "model"
    capabilities: ModelCapabilities = ModelCapabilities()

    @abstractmethod
    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Run one call: yield `TextDelta` events, then one `ModelResponse`.

        Raises:
            ModelError: when the call fails (``.partial`` holds any text already produced).
        """

    async def aclose(self) -> None:  # noqa: B027 - optional hook with a no-op default
        """Release connections or other resources. The default does nothing."""

    def check(self, request: ModelRequest) -> None:
        """Raise `CapabilityError` if the request needs something this model lacks."""
        check_capabilities(self.name, self.capabilities, request)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def check_capabilities(name: str, caps: ModelCapabilities, request: ModelRequest) -> None:
    """The capability check shared by every model; raises before anything is sent."""
    if request.tools and not caps.tools:
        raise CapabilityError(f"model {name!r} does not support tools")
    if request.tool_choice == "required" and not caps.tool_choice_required and len(request.tools) > 1:
        offered = ", ".join(spec.name for spec in request.tools)
        raise CapabilityError(
            f"model {name!r} cannot be made to call one of several tools (tool_choice='required'; offered: "
            f"{offered}): name one tool with tool_choice, or offer only one"
        )
    if request.response_format is not None and not (caps.structured_output or caps.tools):
        raise CapabilityError(f"model {name!r} supports neither JSON-schema output nor tools for structured output")
    if not caps.images and _has_images(request.messages):
        raise CapabilityError(f"model {name!r} does not accept images")


def _has_images(messages: Iterable[Message]) -> bool:
    return any(
        isinstance(message, UserMessage) and any(a.kind == "image" for a in message.attachments) for message in messages
    )
