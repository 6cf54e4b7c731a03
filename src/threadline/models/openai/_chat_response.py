"""A non-streamed Chat Completions answer -> `ModelResponse` (`parse_completion`), and the typed wire structs and
readers the stream (`_chat_stream`) shares. How reasoning is read is told in `_chat_request`."""

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
    WireContext,
    parse_arguments,
    served_model,
    too_deep_to_read,
)
from ..http._error_text import upstream_text
from ..http._reasoning_details import detail_pieces
from ..http._think_tags import split_think_tags
from ._chat_request import GOOGLE


class _Function(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class WireToolCall(msgspec.Struct):
    id: str | None = None
    function: _Function | None = None
    index: int | None = None
    extra_content: Any = None  # Gemini: {"google": {"thought_signature": …}}; typed loosely, as reasoning is


class _Message(msgspec.Struct):
    content: str | None = None
    tool_calls: list[WireToolCall] | None = None
    refusal: str | None = None
    # Thinking, on compatible servers (see the module docstring). Typed loosely: a field no API promises must not
    # make a whole answer unreadable if some server sends it in another shape; only a string is kept.
    reasoning_content: Any = None
    reasoning: Any = None
    reasoning_details: Any = None  # OpenRouter's typed entries (see `_reasoning_details`)


class _Choice(msgspec.Struct):
    message: _Message | None = None
    delta: _Message | None = None
    finish_reason: str | None = None


class _CompletionDetails(msgspec.Struct):
    reasoning_tokens: int | None = None


class _PromptDetails(msgspec.Struct):
    cached_tokens: int | None = None


class WireUsage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    completion_tokens_details: _CompletionDetails | None = None
    prompt_tokens_details: _PromptDetails | None = None


class _Error(msgspec.Struct):
    message: str | None = None
    type: str | None = None
    code: str | int | None = None
    metadata: Any = None  # OpenRouter: the upstream provider's error (see `_error_text`)


class _Body(msgspec.Struct):
    choices: list[_Choice] | None = None
    model: Any = None  # read as text only where it is text: a server's odd value must not cost the answer
    usage: WireUsage | None = None
    error: _Error | None = None


_decode_body = msgspec.json.Decoder(_Body).decode

# Error types that a compatible server may report inside a 200 response or a stream and that are worth a retry.
_RETRYABLE_ERRORS = frozenset({"server_error", "rate_limit_exceeded", "overloaded", "timeout", "internal_error"})


def usage_from(usage: WireUsage | None) -> Usage | None:
    if usage is None:
        return None
    details = usage.completion_tokens_details
    prompt = usage.prompt_tokens_details
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        reasoning_tokens=(details.reasoning_tokens or 0) if details is not None else 0,
        cache_read_tokens=(prompt.cached_tokens or 0) if prompt is not None else 0,
    )


def thinking_of(message: _Message) -> str | None:
    """The thinking a message or delta carries: ``reasoning_content``, else ``reasoning`` (strings only)."""
    text = message.reasoning_content
    if not (isinstance(text, str) and text):
        text = message.reasoning
    return text if isinstance(text, str) and text else None


def error_from(error: _Error) -> ModelError:
    kind = error.type or (str(error.code) if error.code is not None else "error")
    text = error.message or kind
    upstream = upstream_text(error.metadata)
    if upstream:
        text = f"{text} ({upstream})"
    return ModelError(
        f"the OpenAI-compatible server reported an error: {text}",
        type="server" if kind in _RETRYABLE_ERRORS else kind,
        retryable=kind in _RETRYABLE_ERRORS,
    )


def decode_body(data: bytes | str) -> _Body:
    try:
        return _decode_body(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise ModelError(
            f"the server sent a response that is not a chat completion: {exc}", type="bad_response"
        ) from None
    except RecursionError:
        raise too_deep_to_read("the server's response") from None


def calls_from(
    raw: list[tuple[str | None, str, str]], context: WireContext, signatures: list[str | None]
) -> tuple[list[ToolCall], str | None, list[Reasoning]]:
    """Tool calls from ``(id, wire name, argument text)``; the final-result tool's arguments become the content;
    each call's thought signature (``signatures``, in the same order) becomes a `Reasoning` piece naming the call."""
    calls: list[ToolCall] = []
    signed: list[Reasoning] = []
    final_text: str | None = None
    real = context.catalog.real
    response_id = context.ids.response_id
    for (call_id, name, arguments), signature in zip(raw, signatures, strict=True):
        if context.final_tool is not None and name == context.final_tool:
            final_text = arguments
            continue
        parsed, raw_text = parse_arguments(arguments)
        call = ToolCall(id=response_id(call_id), name=real(name), arguments=parsed, raw_arguments=raw_text)
        calls.append(call)
        if signature is not None:
            signed.append(Reasoning(signature=signature, provider=GOOGLE, id=call.id))
    return calls, final_text, signed


def signature_of(extra: Any) -> str | None:
    """The thought signature in a tool call's ``extra_content`` (Gemini), or None."""
    google = extra.get("google") if isinstance(extra, dict) else None
    signature = google.get("thought_signature") if isinstance(google, dict) else None
    return signature if isinstance(signature, str) and signature else None


def parse_completion(data: bytes | str, context: WireContext) -> ModelResponse:
    """A non-streamed ``chat.completion`` body as a `ModelResponse` (real tool names, unique ids).

    Raises:
        ModelError: for a body that is not a completion, or one that carries an error object.
    """
    body = decode_body(data)
    if body.error is not None:
        raise error_from(body.error)
    if not body.choices:
        raise ModelError("the server answered with no choices", type="empty_response", retryable=True)
    choice = body.choices[0]
    message = choice.message or _Message()
    content = message.content
    stop = choice.finish_reason
    if content is None and message.refusal:
        content, stop = message.refusal, "content_filter"
    raw = [
        (
            call.id,
            (call.function.name or "") if call.function else "",
            (call.function.arguments or "") if call.function else "",
        )
        for call in message.tool_calls or ()
    ]
    signatures = [signature_of(call.extra_content) for call in message.tool_calls or ()]
    calls, final_text, signed = calls_from(raw, context, signatures)
    if final_text is not None:
        content, calls, stop = final_text, [], "stop"
    # OpenRouter sends its thinking twice, as text and as entries to send back: the entries are kept, and the text
    # too when no entry carries it (only encrypted ones, say).
    entries = detail_pieces(message.reasoning_details)
    reasoning: list[Reasoning] = []
    if not any(piece.text for piece in entries):
        thinking = thinking_of(message)
        if thinking is None and context.think_tags and content and final_text is None:
            thinking, content = split_think_tags(content)
            content = content or None
        if thinking:
            reasoning.append(Reasoning(text=thinking, provider="openai"))
    reasoning.extend(entries)
    reasoning.extend(signed)
    return ModelResponse(
        content=content,
        tool_calls=calls,
        usage=usage_from(body.usage),
        stop_reason=stop,
        reasoning=reasoning,
        response_model=served_model(body.model),
    )
