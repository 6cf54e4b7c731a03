"""Pure translation between threadline's log and the Anthropic Messages wire format (no I/O).

- `build_request`: a `ModelRequest` -> the JSON body of ``POST /v1/messages`` and a `WireContext`.
- `parse_message`: a non-streamed response body -> `ModelResponse`.
- `MessageStream`: the streamed events (``message_start``, ``content_block_start``/``delta``/``stop``,
  ``message_delta``, ``message_stop``, ``ping``, ``error``) -> text deltas, assembled tool calls, usage, stop reason.

How the log maps onto Anthropic's stricter shape:

- The leading system messages (the per-request prefix and anything right after it) become the top-level
  ``system``, joined by blank lines.
- A system message later in the log (a summary note, an instruction added mid-conversation) keeps its place: it is
  sent as a text block ``<system>…</system>`` in a user turn. Hoisting it into ``system`` would lose where it
  applies from; sending it as its own turn would break the user/assistant alternation. As a user-side block it
  merges with the neighbouring user turn (or tool results), so the alternation holds.
- Consecutive turns of one role are merged into one; tool results become ``tool_result`` blocks (with
  ``is_error``) of a user turn, always before any text in that turn, as the API requires.
- A log that starts with an assistant turn gets a short user turn in front, since the API refuses that shape.
- ``max_tokens`` is always sent (the profile's default when the caller sets none).
- Structured output is a forced final-result tool; its input comes back as the answer's JSON text, and no tool
  call is logged for it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..errors import ModelError
from ..messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    content_for_model,
)
from ._convert_common import (
    FINAL_TOOL_DESCRIPTION,
    IdMap,
    StreamReader,
    WireContext,
    catalog_for,
    final_tool_name,
    image_bytes,
    parse_arguments,
    plain,
)
from .base import ModelRequest, ModelResponse
from .profiles import ModelProfile

__all__ = ["DEFAULT_MAX_TOKENS", "FIRST_TURN", "MessageStream", "build_request", "parse_message"]

DEFAULT_MAX_TOKENS = 4_096
FIRST_TURN = "(conversation start)"

_encode = msgspec.json.Encoder().encode


class _Turns:
    """Builds the alternating turn list, merging consecutive blocks of one role."""

    __slots__ = ("results", "turns")

    def __init__(self) -> None:
        self.turns: list[dict[str, Any]] = []
        self.results: list[int] = []  # per turn: how many tool_result blocks lead its content

    def add(self, role: str, block: dict[str, Any]) -> None:
        turns = self.turns
        if turns and turns[-1]["role"] == role:
            content = turns[-1]["content"]
            if block["type"] == "tool_result":
                content.insert(self.results[-1], block)
                self.results[-1] += 1
            else:
                content.append(block)
            return
        turns.append({"role": role, "content": [block]})
        self.results.append(1 if block["type"] == "tool_result" else 0)


def build_request(
    request: ModelRequest, model: str, profile: ModelProfile, *, stream: bool
) -> tuple[dict[str, Any], WireContext]:
    """The Messages API request body for ``request``.

    Args:
        request: The request (messages exactly as sent, tools by real name).
        model: The provider's model id, e.g. ``"claude-haiku-4-5"``.
        profile: The model family's profile (default ``max_tokens``).
        stream: Ask for a server-sent-event stream.

    Returns:
        The body (a plain dict, ready to encode) and the context to read the response with.
    """
    catalog = catalog_for(request)
    ids = IdMap(strict=True)
    wire_name = catalog.wire
    wire_id = ids.wire
    system: list[str] = []
    turns = _Turns()
    add = turns.add
    leading = True
    history_tools: list[str] = []
    for message in request.messages:
        if isinstance(message, SystemMessage):
            if leading:
                system.append(message.content)
            else:
                add("user", {"type": "text", "text": f"<system>\n{message.content}\n</system>"})
            continue
        leading = False
        if isinstance(message, UserMessage):
            for attachment in message.attachments:
                if attachment.kind == "image":
                    add("user", _image_block(attachment))
            if message.content:
                add("user", {"type": "text", "text": message.content})
        elif isinstance(message, AssistantMessage):
            text = content_for_model(message)
            if text:
                add("assistant", {"type": "text", "text": text})
            for call in message.tool_calls:
                name = wire_name(call.name)
                history_tools.append(call.name)
                # Arguments that were not JSON cannot be sent as the object Anthropic needs; the tool result
                # that answered the call already told the model what was wrong with them.
                add(
                    "assistant",
                    {"type": "tool_use", "id": wire_id(call.id), "name": name, "input": call.arguments},
                )
        elif isinstance(message, ToolMessage):
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": wire_id(message.tool_call_id),
                "content": message.content,
            }
            if message.is_error:
                block["is_error"] = True
            add("user", block)

    messages = turns.turns
    if messages and messages[0]["role"] == "assistant":
        messages.insert(0, {"role": "user", "content": [{"type": "text", "text": FIRST_TURN}]})
    if messages and messages[-1]["role"] == "assistant":
        # The API refuses a final assistant turn (a prefill) that ends in whitespace.
        last = messages[-1]["content"][-1]
        if last["type"] == "text":
            last["text"] = last["text"].rstrip() or "…"

    settings = request.settings
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": settings.max_tokens or profile.max_output_tokens or DEFAULT_MAX_TOKENS,
        "messages": messages,
    }
    if system:
        body["system"] = "\n\n".join(system)
    tools: list[dict[str, Any]] = []
    for spec in request.tools:
        tool: dict[str, Any] = {"name": wire_name(spec.name), "input_schema": plain(spec.parameters)}
        if spec.description:
            tool["description"] = spec.description
        tools.append(tool)
    choice = request.tool_choice
    context = WireContext(catalog, ids)
    response_format = request.response_format
    if response_format is not None:
        final = final_tool_name(tool["name"] for tool in tools)
        context.final_tool = final
        tools.append(
            {"name": final, "description": FINAL_TOOL_DESCRIPTION, "input_schema": plain(response_format.schema)}
        )
        if choice in (None, "auto", "none"):
            choice = final if len(tools) == 1 else "required"
    if not tools and history_tools:
        # The log holds tool calls but this request offers no tools (the round limit was reached): the API wants
        # the tools of tool_use blocks defined, so they are declared and calling them is switched off.
        for real in dict.fromkeys(history_tools):
            tools.append({"name": wire_name(real), "input_schema": {"type": "object"}})
        choice = "none"
    if tools:
        body["tools"] = tools
        if choice is not None:
            body["tool_choice"] = _tool_choice(choice, context, wire_name)
    if settings.temperature is not None and profile.temperature:
        body["temperature"] = settings.temperature
    if stream:
        body["stream"] = True
    if settings.extras:
        body.update(settings.extras_for("anthropic"))
    return body, context


def _tool_choice(choice: str, context: WireContext, wire_name: Any) -> dict[str, Any]:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    name = choice if choice == context.final_tool else wire_name(choice)
    return {"type": "tool", "name": name}


def _image_block(attachment: Any) -> dict[str, Any]:
    if attachment.url is not None:
        return {"type": "image", "source": {"type": "url", "url": attachment.url}}
    import base64

    data = base64.b64encode(image_bytes(attachment)).decode("ascii")
    return {"type": "image", "source": {"type": "base64", "media_type": attachment.media_type, "data": data}}


# -- responses ----------------------------------------------------------------------------------------------------


class _Block(msgspec.Struct):
    type: str = ""
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None


class _Delta(msgspec.Struct):
    type: str | None = None
    text: str | None = None
    partial_json: str | None = None
    stop_reason: str | None = None


class _Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class _Error(msgspec.Struct):
    type: str | None = None
    message: str | None = None


class _Message(msgspec.Struct):
    content: list[_Block] | None = None
    stop_reason: str | None = None
    usage: _Usage | None = None
    error: _Error | None = None


class _Event(msgspec.Struct):
    type: str = ""
    index: int = 0
    delta: _Delta | None = None
    content_block: _Block | None = None
    message: _Message | None = None
    usage: _Usage | None = None
    error: _Error | None = None


_decode_message = msgspec.json.Decoder(_Message).decode
_decode_event = msgspec.json.Decoder(_Event).decode

_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_RETRYABLE = {"rate_limit_error": "rate_limit", "api_error": "server", "overloaded_error": "overloaded"}


def error_from(error: _Error | None) -> ModelError:
    """The `ModelError` for an Anthropic error object (in a stream or a body)."""
    kind = (error.type if error else None) or "error"
    message = (error.message if error else None) or kind
    retry_type = _RETRYABLE.get(kind)
    return ModelError(
        f"Anthropic reported an error: {message} ({kind})",
        type=retry_type or kind,
        retryable=retry_type is not None,
    )


def _usage(usage: _Usage | None) -> Usage | None:
    if usage is None:
        return None
    prompt = (usage.input_tokens or 0) + (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
    return Usage(input_tokens=prompt, output_tokens=usage.output_tokens or 0)


def _response(
    texts: list[str],
    uses: list[tuple[str | None, str, dict[str, Any], str | None]],
    stop: str | None,
    usage: Any,
    context: WireContext,
) -> ModelResponse:
    content: str | None = "".join(texts) or None
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
            )
        calls.append(ToolCall(id=response_id(call_id), name=real(name), arguments=arguments, raw_arguments=raw))
    return ModelResponse(
        content=content, tool_calls=calls, usage=usage, stop_reason=_STOP_REASONS.get(stop or "", stop)
    )


def parse_message(data: bytes | str, context: WireContext) -> ModelResponse:
    """A non-streamed Messages API body as a `ModelResponse` (real tool names, unique ids).

    Raises:
        ModelError: for a body that is not a message, or an error object.
    """
    try:
        message = _decode_message(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise ModelError(f"Anthropic sent a response that is not a message: {exc}", type="bad_response") from None
    if message.error is not None:
        raise error_from(message.error)
    texts: list[str] = []
    uses: list[tuple[str | None, str, dict[str, Any], str | None]] = []
    for block in message.content or ():
        if block.type == "text" and block.text:
            texts.append(block.text)
        elif block.type == "tool_use":
            arguments = block.input if isinstance(block.input, dict) else {}
            raw = None if isinstance(block.input, dict) or block.input is None else _encode(block.input).decode("utf-8")
            uses.append((block.id, block.name or "", arguments, raw))
    return _response(texts, uses, message.stop_reason, _usage(message.usage), context)


class MessageStream(StreamReader):
    """Reads one streamed message, event by event.

    Feed each SSE event to `feed`, which returns the text to show (or None); `finish` then gives the complete
    `ModelResponse`. Tool inputs are put together from their ``input_json_delta`` fragments; the final-result
    tool's fragments are shown as text, since they are the answer.
    """

    __slots__ = ("_input", "_output")
    _usage: _Usage | None  # the slot StreamReader keeps, holding this API's usage struct

    def __init__(self, context: WireContext) -> None:
        super().__init__(context)
        # Token counts from ``message_delta``, which win over those of ``message_start``.
        self._output: int | None = None
        self._input: int | None = None

    def feed(self, event: str, data: str) -> str | None:
        """Take one event; return the text it adds, if any.

        Raises:
            ModelError: for an ``error`` event or an unreadable one.
        """
        try:
            item = _decode_event(data)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            raise ModelError(f"Anthropic sent an unreadable stream event: {exc}", type="bad_response") from None
        kind = item.type or event
        if kind == "content_block_delta":
            delta = item.delta
            if delta is None:
                return None
            if delta.type == "text_delta" and delta.text:
                self._parts.append(delta.text)
                return delta.text
            if delta.type == "input_json_delta" and delta.partial_json:
                block = self._calls.get(item.index)
                if block is not None:
                    block[2].append(delta.partial_json)
                    if block[1] == self._context.final_tool:
                        return delta.partial_json
            return None
        if kind == "content_block_start":
            start = item.content_block
            if start is not None:
                if start.type == "tool_use":
                    self._calls[item.index] = [start.id, start.name or "", []]
                elif start.type == "text" and start.text:
                    self._parts.append(start.text)
                    return start.text
            return None
        if kind == "message_delta":
            if item.delta is not None and item.delta.stop_reason is not None:
                self._stop = item.delta.stop_reason
            if item.usage is not None:
                self._output = item.usage.output_tokens if item.usage.output_tokens is not None else self._output
                if item.usage.input_tokens is not None:
                    self._input = item.usage.input_tokens
            return None
        if kind == "message_start":
            if item.message is not None:
                self._usage = item.message.usage
            return None
        if kind == "message_stop":
            self.done = True
            return None
        if kind == "error":
            raise error_from(item.error)
        return None  # ping, content_block_stop, and event types added after this was written

    def finish(self) -> ModelResponse:
        """The complete response.

        Raises:
            ModelError: when the stream ended before the message was complete (a cut stream).
        """
        uses = [(call_id, name, *parse_arguments(text)) for call_id, name, text in self._complete_calls()]
        if self._usage is None and self._output is None and self._input is None:
            usage = None
        else:
            usage = self._usage or _Usage()
        if usage is not None and self._output is not None:
            usage.output_tokens = self._output
        if usage is not None and self._input is not None:
            usage.input_tokens = self._input
        return _response(self._parts, uses, self._stop, _usage(usage), self._context)
