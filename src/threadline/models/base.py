"""What a model is to threadline: a request, a stream of events, capabilities.

A `Model` receives one `ModelRequest` (messages exactly as they are sent, system prefix included; tool specs with
real names; settings) and yields `TextDelta` and `ReasoningDelta` events while it streams, then exactly one
`ModelResponse`. It raises `ModelError` when the call fails. Retries, wire names and wire formats are the adapter's
business; the turn engine only sees these types.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, Literal, TypeAlias

import msgspec

from ..errors import CapabilityError
from ..message_types import Message, Reasoning, ToolCall, Usage, UserMessage

__all__ = [
    "Model",
    "ModelCapabilities",
    "ModelEvent",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "ReasoningDelta",
    "ReasoningSettings",
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
        reasoning: Takes reasoning settings (``.reasoning(effort=…, budget_tokens=…)``): a thinking budget or a
            reasoning effort.
    """

    tools: bool = True
    streaming: bool = True
    structured_output: bool = False
    images: bool = False
    context_length: int | None = None
    tool_choice_required: bool = True
    reasoning: bool = False


class ToolSpec(msgspec.Struct, frozen=True):
    """A tool as offered to a model: real name, description, JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]


class ResponseFormat(msgspec.Struct, frozen=True):
    """A request for output matching a JSON schema (``prompt_for_type``)."""

    name: str
    schema: Mapping[str, Any]


ReasoningEffort: TypeAlias = Literal["low", "medium", "high"]
EFFORTS: tuple[ReasoningEffort, ...] = ("low", "medium", "high")
# Anthropic's thinking takes a token budget, OpenAI's reasoning an effort: each is derived from the other with these.
_BUDGETS: dict[str, int] = {"low": 2_048, "medium": 8_192, "high": 24_576}


class ReasoningSettings(msgspec.Struct, frozen=True):
    """How much a reasoning model should think (``.reasoning(effort=…, budget_tokens=…)`` on the builder).

    Each provider takes one of the two: Claude 4.5 and earlier a thinking budget in tokens, OpenAI and Claude 4.6
    and later (adaptive thinking) an effort. The one given is used where it fits and the other is derived from it
    (`budget`, `level`: a budget maps to the nearest effort at or above it); with neither, ``"medium"``.

    Attributes:
        effort: ``"low"``, ``"medium"`` or ``"high"``.
        budget_tokens: Tokens the model may spend thinking.
    """

    effort: ReasoningEffort | None = None
    budget_tokens: int | None = None

    def budget(self) -> int:
        """The thinking budget in tokens: ``budget_tokens``, else one derived from the effort (low 2,048, medium
        8,192, high 24,576)."""
        if self.budget_tokens is not None:
            return self.budget_tokens
        return _BUDGETS[self.effort or "medium"]

    def level(self) -> ReasoningEffort:
        """The effort: ``effort``, else the one whose budget (see `budget`) is the nearest at or above
        ``budget_tokens``."""
        if self.effort is not None:
            return self.effort
        if self.budget_tokens is None:
            return "medium"
        for effort in EFFORTS:
            if self.budget_tokens <= _BUDGETS[effort]:
                return effort
        return "high"


class ModelSettings(msgspec.Struct):
    """Per-request settings.

    Attributes:
        stream: Stream the answer (adapters may still buffer when the provider cannot).
        max_tokens: Upper bound on generated tokens.
        temperature: Sampling temperature.
        timeout: Seconds to wait for the model: for HTTP providers, the longest one attempt may take in all, from
            the request to the answer's last byte (streamed or not; the waits between retries are not counted); for
            the embedded model, the whole call.
        max_retries: Retries of retryable failures (HTTP providers).
        extras: Provider-prefixed extras, e.g. ``{"openai_seed": 1, "local_top_k": 40}``.
        reasoning: Turn a reasoning model's thinking on, and say how much (None: the provider's default, which for
            Anthropic is no thinking).
        prompt_cache: Ask the provider to cache the request's stable prefix (``.cache(prompt=True)`` on the
            builder): True for the provider's default lifetime, a lifetime (``"5m"`` or ``"1h"``), or None/False
            for off. Anthropic gets ``cache_control`` breakpoints (see `threadline.models.anthropic`); OpenAI caches
            long prefixes on its own, whatever this says.
    """

    stream: bool = True
    max_tokens: int | None = None
    temperature: float | None = None
    timeout: float | None = None
    max_retries: int | None = None
    extras: dict[str, Any] = msgspec.field(default_factory=dict)
    reasoning: ReasoningSettings | None = None
    prompt_cache: bool | str | None = None

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
        reasoning_shown: Whether the caller shows `ReasoningDelta` pieces as they stream (the turn engine does when
            it has an ``on_reasoning`` callback). A model may retry a failed call after thinking only when they are
            not shown, as it may after text only when none was shown.
    """

    messages: list[Message]
    tools: list[ToolSpec] = msgspec.field(default_factory=list)
    tool_choice: ToolChoice | None = None
    settings: ModelSettings = msgspec.field(default_factory=ModelSettings)
    response_format: ResponseFormat | None = None
    reasoning_shown: bool = True


class TextDelta(msgspec.Struct, frozen=True):
    """A piece of streamed answer text."""

    text: str


class ReasoningDelta(msgspec.Struct, frozen=True):
    """A piece of streamed reasoning (thinking or a summary of it), shown as it comes; the whole pieces, with
    their signatures, arrive in `ModelResponse.reasoning`.

    Attributes:
        text: The piece.
        part: Which reasoning part of the answer it belongs to (0, 1, …: a new number starts a new part).
        provider: The wire family (as in `Reasoning.provider`).
    """

    text: str
    part: int = 0
    provider: str | None = None


StopReason: TypeAlias = Literal["stop", "tool_calls", "length", "content_filter", "error"] | str


class ModelResponse(msgspec.Struct):
    """The complete result of one model call; the last event of a stream.

    Attributes:
        model: The name to record on the assistant message, when it is not the `Model`'s own name.
        reasoning: The answer's reasoning pieces, in order, exactly as the provider sent them (signatures and
            opaque data included), for the log.
        response_model: The model id the provider says produced the answer, where it says one (OpenAI answers a
            ``gpt-4o-mini`` request as ``gpt-4o-mini-2024-07-18``): tracing's ``gen_ai.response.model``. The log
            keeps the name the request used.
    """

    content: str | None
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    usage: Usage | None = None
    stop_reason: StopReason | None = None
    model: str | None = None
    reasoning: list[Reasoning] = msgspec.field(default_factory=list)
    response_model: str | None = None


ModelEvent: TypeAlias = TextDelta | ReasoningDelta | ModelResponse


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
        """Run one call: yield `TextDelta` (and `ReasoningDelta`) events, then one `ModelResponse`.

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
    if request.settings.reasoning is not None and not caps.reasoning:
        raise CapabilityError(
            f"model {name!r} takes no reasoning settings (.reasoning(...)): its profile has no reasoning; leave "
            "them out, or pick a reasoning model"
        )


def _has_images(messages: Iterable[Message]) -> bool:
    return any(
        isinstance(message, UserMessage) and any(a.kind == "image" for a in message.attachments) for message in messages
    )
