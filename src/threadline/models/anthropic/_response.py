"""A non-streamed Messages API answer -> `ModelResponse` (`parse_message`), and the typed wire structs and readers
the stream (`_stream`) shares. How the log maps onto the wire is told in `_request`."""

from __future__ import annotations

from typing import Any

import msgspec

from ...errors import ModelError
from ...message_types import (
    Reasoning,
    ToolCall,
    Usage,
)
from ..base import ModelResponse
from ..http._convert_common import (
    PARAGRAPH_BREAK,
    WireContext,
    input_arguments,
    served_model,
    too_deep_to_read,
)
from ._thinking import (
    PROVIDER,
    ReasoningOrder,
)

__all__ = [
    "WireBlock",
    "WireOutputDetails",
    "WireUsage",
    "bad_response",
    "decode_event",
    "error_from",
    "parse_message",
    "response_from",
    "unknown_block",
    "unsigned",
    "usage_from",
]

_encode = msgspec.json.Encoder().encode


# -- responses ----------------------------------------------------------------------------------------------------


class WireBlock(msgspec.Struct):
    type: str = ""
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None


class _Delta(msgspec.Struct):
    type: str | None = None
    text: str | None = None
    partial_json: str | None = None
    thinking: str | None = None
    signature: str | None = None
    stop_reason: str | None = None


class WireOutputDetails(msgspec.Struct):
    thinking_tokens: int | None = None


class WireUsage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    output_tokens_details: WireOutputDetails | None = None


class _ErrorDetails(msgspec.Struct):
    error_code: Any = None


class _Error(msgspec.Struct):
    type: str | None = None
    message: str | None = None
    details: _ErrorDetails | None = None


class _Message(msgspec.Struct):
    content: list[WireBlock] | None = None
    model: Any = None  # the model id that answered; read as text only where it is text
    stop_reason: str | None = None
    usage: WireUsage | None = None
    error: _Error | None = None


class _Event(msgspec.Struct):
    type: str = ""
    index: int = 0
    delta: _Delta | None = None
    content_block: WireBlock | None = None
    message: _Message | None = None
    usage: WireUsage | None = None
    error: _Error | None = None


_decode_message = msgspec.json.Decoder(_Message).decode
decode_event = msgspec.json.Decoder(_Event).decode

_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


# The blocks of Anthropic's server tools (besides every "<tool>_tool_result"): their calls and MCP connector calls.
_SERVER_TOOL_BLOCKS = frozenset({"server_tool_use", "mcp_tool_use", "mcp_tool_result", "container_upload"})
_RETRYABLE = {"rate_limit_error": "rate_limit", "api_error": "server", "overloaded_error": "overloaded"}


_SPEND_LIMIT = "enforced_spend_limit_reached"


def error_from(error: _Error | None) -> ModelError:
    """The `ModelError` for an Anthropic error object (in a stream or a body)."""
    kind = (error.type if error else None) or "error"
    message = (error.message if error else None) or kind
    if error is not None and error.details is not None and error.details.error_code == _SPEND_LIMIT:
        # A rate_limit_error by its type, but no wait lifts it: retrying only repeats the refusal.
        # The same as the transport's answer to such an HTTP 429 (type "quota"), for one in a stream or a body.
        return ModelError(
            f"Anthropic refused the request: the account's quota or spend limit is used up: {message.rstrip('.')}. "
            "Retrying cannot help until it is raised or resets",
            type="quota",
        )
    retry_type = _RETRYABLE.get(kind)
    return ModelError(
        f"Anthropic reported an error: {message} ({kind})",
        type=retry_type or kind,
        retryable=retry_type is not None,
    )


def bad_response(what: str) -> ModelError:
    """An answer that cannot be logged whole: refused, so nothing of it is lost silently or replayed wrongly."""
    return ModelError(f"Anthropic sent {what}", type="bad_response")


def unknown_block(kind: str, index: int) -> ModelError:
    if kind in _SERVER_TOOL_BLOCKS or kind.endswith("_tool_result"):
        return ModelError(
            f"Anthropic answered with a server tool's block ({kind!r}, block {index}): server tools (web search, "
            "web fetch, code execution…) are not supported by threadline's log yet, so the answer is refused "
            "rather than logged without it; leave them out of the anthropic_tools extra",
            type="bad_response",
        )
    return bad_response(
        f"a content block of a type threadline does not know ({kind!r}, block {index}); the answer is refused "
        "rather than logged without it"
    )


def unsigned(index: int) -> ModelError:
    return bad_response(
        f"a thinking block without a signature (block {index}); it could not be sent back as the API requires, so "
        "the answer is refused"
    )


def usage_from(usage: WireUsage | None) -> Usage | None:
    if usage is None:
        return None
    # Anthropic's input_tokens are the uncached part only; the log's input_tokens hold the whole request.
    written = usage.cache_creation_input_tokens or 0
    read = usage.cache_read_input_tokens or 0
    details = usage.output_tokens_details
    thought = (details.thinking_tokens or 0) if details is not None else 0
    return Usage(
        input_tokens=(usage.input_tokens or 0) + written + read,
        output_tokens=usage.output_tokens or 0,
        reasoning_tokens=thought,
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


def response_from(
    texts: list[str],
    uses: list[tuple[str | None, str, dict[str, Any], str | None]],
    stop: str | None,
    usage: Any,
    context: WireContext,
    reasoning: list[Reasoning],
    served: Any = None,
) -> ModelResponse:
    content: str | None = "".join(texts) or None
    response_model = served_model(served)
    calls = []
    real = context.catalog.real
    response_id = context.ids.response_id
    for call_id, name, arguments, raw in uses:
        if context.final_tool is not None and name == context.final_tool:
            return ModelResponse(
                content=raw if raw is not None else _encode(arguments).decode("utf-8"),
                tool_calls=[],
                usage=usage,
                stop_reason="stop",
                reasoning=reasoning,
                response_model=response_model,
            )
        calls.append(ToolCall(id=response_id(call_id), name=real(name), arguments=arguments, raw_arguments=raw))
    return ModelResponse(
        content=content,
        tool_calls=calls,
        usage=usage,
        stop_reason=_STOP_REASONS.get(stop or "", stop),
        reasoning=reasoning,
        response_model=response_model,
    )


def parse_message(data: bytes | str, context: WireContext) -> ModelResponse:
    """A non-streamed Messages API body as a `ModelResponse` (real tool names, unique ids, Claude's thinking).

    Raises:
        ModelError: for a body that is not a message, an error object, a thinking block without its signature, or
            a content block of an unknown type (``type="bad_response"``).
    """
    try:
        message = _decode_message(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise ModelError(f"Anthropic sent a response that is not a message: {exc}", type="bad_response") from None
    except RecursionError:
        # A tool input far deeper than the log keeps: in a body it is an object no decoder can build (a stream
        # carries it as text, which is kept as raw_arguments).
        raise too_deep_to_read("Anthropic's response") from None
    if message.error is not None:
        raise error_from(message.error)
    texts: list[str] = []
    uses: list[tuple[str | None, str, dict[str, Any], str | None]] = []
    reasoning: list[Reasoning] = []
    order: ReasoningOrder | None = None
    apart = False  # a block other than text came after the last text (see PARAGRAPH_BREAK)
    for index, block in enumerate(message.content or ()):
        kind = block.type
        if kind != "text":
            apart = bool(texts)
        if kind == "text":
            if block.text:
                if apart:
                    texts.append(PARAGRAPH_BREAK)
                    apart = False
                texts.append(block.text)
                if order is not None:
                    order.text()
        elif kind == "tool_use":
            uses.append((block.id, block.name or "", *input_arguments(block.input)))
            if order is not None:
                order.tool()
        elif kind == "thinking" or kind == "redacted_thinking":
            if order is None:
                order = ReasoningOrder()
                if texts:
                    order.text()
                for _ in uses:
                    order.tool()
            order.add()
            reasoning.append(_thought(block, index))
        else:
            raise unknown_block(kind, index)
    if order is not None:
        order.place(reasoning, bool(texts))
    return response_from(texts, uses, message.stop_reason, usage_from(message.usage), context, reasoning, message.model)


def _thought(block: WireBlock, index: int) -> Reasoning:
    if block.type == "redacted_thinking":
        if not block.data:
            raise bad_response(f"a redacted_thinking block without data (block {index})")
        return Reasoning(redacted=block.data, provider=PROVIDER)
    if not block.signature:
        raise unsigned(index)
    return Reasoning(text=block.thinking or "", signature=block.signature, provider=PROVIDER)
