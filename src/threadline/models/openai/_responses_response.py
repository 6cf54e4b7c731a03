"""A non-streamed Responses API answer -> `ModelResponse` (`parse_response`), and the typed wire structs and
readers the stream (`_responses_stream`) shares. What is kept of reasoning items is told in `_responses_request`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
    parse_arguments,
    served_model,
    too_deep_to_read,
)

if TYPE_CHECKING:
    pass

from ._responses_request import ResponsesContext

# Typed structs decode faster than dicts and ignore every field threadline does not read.


class _Part(msgspec.Struct):
    type: str = ""
    text: str | None = None
    refusal: str | None = None


class WireItem(msgspec.Struct):
    type: str = ""
    id: str | None = None
    summary: list[_Part] | None = None
    encrypted_content: str | None = None
    content: list[_Part] | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None


class _OutputDetails(msgspec.Struct):
    reasoning_tokens: int | None = None


class _InputDetails(msgspec.Struct):
    cached_tokens: int | None = None


class _Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    output_tokens_details: _OutputDetails | None = None
    input_tokens_details: _InputDetails | None = None


class WireError(msgspec.Struct):
    message: str | None = None
    code: str | int | None = None
    type: str | None = None


class _Incomplete(msgspec.Struct):
    reason: str | None = None


class WireResponse(msgspec.Struct):
    status: str | None = None
    model: Any = None  # the model id that answered; read as text only where it is text
    output: list[WireItem] | None = None
    usage: _Usage | None = None
    error: WireError | None = None
    incomplete_details: _Incomplete | None = None


class _Event(msgspec.Struct):
    type: str = ""
    output_index: int = 0
    summary_index: int = 0
    content_index: int = 0
    delta: str | None = None
    item: WireItem | None = None
    response: WireResponse | None = None
    message: str | None = None
    code: str | int | None = None
    error: WireError | None = None


_decode_response = msgspec.json.Decoder(WireResponse).decode
decode_event = msgspec.json.Decoder(_Event).decode

# Events that add nothing the deltas and the complete items do not carry: skipped by their SSE name, undecoded.
SKIPPED_EVENTS = frozenset(
    {
        "response.created",
        "response.in_progress",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.done",
        "response.refusal.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.done",
        "response.function_call_arguments.done",
    }
)

# Output items of OpenAI's hosted tools (web search, file search, code interpreter, image generation, remote MCP):
# the server ran them and answered within the same response, so they need nothing from threadline. They are not
# kept: stateless requests could not refer to them, and the answer's text says what they found.
HOSTED_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
    }
)

# Output items that wait for the caller's answer, which threadline cannot give (it runs function tools only).
_NEEDS_ANSWER = {
    "computer_call": "a computer_call_output",
    "mcp_approval_request": "an mcp_approval_response",
    "local_shell_call": "a local_shell_call_output",
    "shell_call": "a shell_call_output",
    "apply_patch_call": "an apply_patch_call_output",
    "custom_tool_call": "a custom_tool_call_output",
}

# The documented reasons of an incomplete response (``incomplete_details.reason``), as stop reasons.
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}

# Error codes of a failed response that are worth a retry.
_RETRYABLE = {"server_error": "server", "rate_limit_exceeded": "rate_limit"}


def error_from(error: WireError | None, fallback: str = "the response failed") -> ModelError:
    code = str(error.code) if error is not None and error.code is not None else None
    kind = code or (error.type if error is not None else None) or "error"
    message = (error.message if error is not None else None) or fallback
    retry = _RETRYABLE.get(kind)
    return ModelError(
        f"OpenAI's Responses API reported an error: {message} ({kind})",
        type=retry or kind,
        retryable=retry is not None,
    )


def _usage(usage: _Usage | None) -> Usage | None:
    if usage is None:
        return None
    details = usage.output_tokens_details
    cached = usage.input_tokens_details
    return Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        reasoning_tokens=(details.reasoning_tokens or 0) if details is not None else 0,
        cache_read_tokens=(cached.cached_tokens or 0) if cached is not None else 0,
    )


def answer_from(
    response: WireResponse, items: list[WireItem], context: ResponsesContext, streamed: str | None
) -> ModelResponse:
    """The answer of a finished response, from its output items in order (``streamed``: the text already shown).

    Raises:
        ModelError: for a failed response, an output item of a type threadline does not read, or an incomplete
            response with nothing in it for a reason OpenAI does not document (for the documented two, the empty
            answer is returned with its stop reason, ``"length"`` or ``"content_filter"``, and its reasoning).
    """
    if response.status == "failed" or response.error is not None:
        raise error_from(response.error)
    texts: list[str] = []
    reasoning: list[Reasoning] = []
    calls: list[ToolCall] = []
    refused = False
    final_text: str | None = None
    count = 0  # the answer's parts so far (reasoning pieces, its text, its calls), for `Reasoning.position`
    real = context.catalog.real
    response_id = context.ids.response_id
    origin = context.origin  # the server that answered: its pieces go back to it alone
    for item in items:
        kind = item.type
        if kind == "reasoning":
            summary = [part.text or "" for part in item.summary or () if part.type == "summary_text"]
            if not summary:
                # gpt-oss and other open models behind vLLM and other compatible servers show their raw thinking as
                # ``reasoning_text`` content; OpenAI's own models show only summaries, so there is never both.
                summary = [part.text or "" for part in item.content or () if part.type == "reasoning_text"]
            for number, text in enumerate(summary or [""]):
                reasoning.append(
                    Reasoning(
                        text=text,
                        redacted=item.encrypted_content if number == 0 else None,
                        provider=origin,
                        id=item.id,
                        position=count if count > len(reasoning) else None,
                    )
                )
                count += 1
        elif kind == "message":
            said: list[str] = []
            for part in item.content or ():
                piece = part.text if part.type == "output_text" else part.refusal if part.type == "refusal" else None
                refused = refused or part.type == "refusal"
                if piece:
                    said.append(piece)
            if said:
                count += not texts  # the answer's text is one part
                texts.append("".join(said))  # the parts of one message as sent; messages apart (see `answer_from`)
        elif kind == "function_call":
            name = item.name or ""
            if context.final_tool is not None and name == context.final_tool:
                final_text = item.arguments or ""
                continue
            parsed, raw = parse_arguments(item.arguments or "")
            calls.append(ToolCall(id=response_id(item.call_id), name=real(name), arguments=parsed, raw_arguments=raw))
            count += 1
        elif kind in HOSTED_ITEMS:
            continue
        elif kind in _NEEDS_ANSWER:
            raise ModelError(
                f"OpenAI's Responses API answered with an output item of type {kind!r}, which waits for "
                f"{_NEEDS_ANSWER[kind]} that threadline cannot give (it runs function tools, and hosted tools run on "
                "OpenAI's side); offer only function tools and hosted tools",
                type="bad_response",
            )
        else:
            raise ModelError(
                f"OpenAI's Responses API answered with an output item of type {kind!r}, which threadline does not "
                "read (it reads message, reasoning and function_call items, and skips those of hosted tools); "
                "nothing of this answer was kept",
                type="bad_response",
            )
    # Separate message items are separate paragraphs (a model writes one before a hosted tool call and one after).
    content: str | None = streamed if streamed else PARAGRAPH_BREAK.join(texts) or None
    incomplete = response.status == "incomplete"
    reason = response.incomplete_details.reason if response.incomplete_details is not None else None
    if final_text is not None:
        content, stop = final_text, "stop"
    elif incomplete:
        stop = _INCOMPLETE.get(reason or "", "length")  # an unknown reason: cut short all the same
    elif refused:
        stop = "content_filter"
    else:
        stop = "tool_calls" if calls else "stop"
    if incomplete and not content and not calls and reason not in _INCOMPLETE:
        # The two documented reasons come back as an empty answer with its stop reason and reasoning, which the
        # transport fails as every provider's ("length" or "refused", the thinking kept in the failure's log).
        raise ModelError(
            f"OpenAI's Responses API stopped before answering ({reason or 'no reason given'}), with no text and no "
            "tool call",
            type="incomplete",
        )
    return ModelResponse(
        content=content,
        tool_calls=calls,
        usage=_usage(response.usage),
        stop_reason=stop,
        reasoning=reasoning,
        response_model=served_model(response.model),
    )


def parse_response(data: bytes | str, context: ResponsesContext) -> ModelResponse:
    """A non-streamed ``response`` object as a `ModelResponse` (real tool names, unique ids, reasoning pieces).

    Raises:
        ModelError: for a body that is not a response, a failed response, or an output item threadline does not
            read.
    """
    try:
        response = _decode_response(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise ModelError(
            f"OpenAI sent a body that is not a Responses API response: {exc}", type="bad_response"
        ) from None
    except RecursionError:
        raise too_deep_to_read("the Responses API's response") from None
    return answer_from(response, response.output or [], context, None)
