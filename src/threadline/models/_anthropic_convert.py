"""Pure translation between threadline's log and the Anthropic Messages wire format (no I/O).

- `build_request`: a `ModelRequest` -> the JSON body of ``POST /v1/messages`` and a `WireContext`.
- `parse_message`: a non-streamed response body -> `ModelResponse`.
- `MessageStream`: the streamed events (``message_start``, ``content_block_start``/``delta``/``stop``,
  ``message_delta``, ``message_stop``, ``ping``, ``error``) -> text and thinking deltas, assembled tool calls and
  thinking blocks, usage, stop reason.

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
- Text the API would refuse is not sent ("text content blocks must contain non-whitespace text"): an assistant
  turn's whitespace-only text (Claude's own "\n\n" before a tool call) is left out of the request, the log keeps
  it; a user message whose text is blank sends only its attachments, and a blank last message with nothing
  attached is refused before anything is sent (`check_request`), since leaving it out would turn the request into
  a prefill of the previous answer.
- File attachments become ``document`` blocks: a PDF with a base64 source, a text file (``text/*``) with a plain
  text source. Any other file, or one without data, is refused before anything is sent (`check_request`), never
  dropped.
- ``max_tokens`` is always sent (the profile's default when the caller sets none).
- Server tools (web search, code execution…) passed as the ``anthropic_tools`` extra go after the function tools.
  Their answers' blocks (``server_tool_use``, ``web_search_tool_result``…) are not in threadline's log yet: such
  an answer is refused with an error that says so (``type="bad_response"``).
- Structured output is Claude's JSON outputs (``output_config.format``) where the family and the schema allow it
  (`_anthropic_schema`); otherwise a forced final-result tool, whose input comes back as the answer's JSON text, and
  no tool call is logged for it.
- Claude's thinking (``thinking`` and ``redacted_thinking`` blocks) is kept in order as `Reasoning` pieces, with a
  ``position`` for a piece that came after a text or a tool call (interleaved thinking), and goes back exactly as
  received; the rules of thinking on the wire (a budget or adaptive thinking, by the family's profile) live in
  `_anthropic_thinking`. A content block of a type this module
  does not know is refused (``bad_response``) rather than dropped.
- Citations (``citations`` on text blocks, ``citations_delta`` in a stream) are not kept: the cited text is.
- A ``rate_limit_error`` whose ``details.error_code`` is ``enforced_spend_limit_reached`` (the organization's
  monthly spend limit), in a stream or a body, is not retryable (``type="quota"``, as the transport makes such an
  HTTP 429): access resumes only with the next month or a higher tier.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ..attachments import Attachment
from ..errors import ModelError, UserError
from ..messages import (
    AssistantMessage,
    Message,
    Reasoning,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    content_for_model,
)
from ._anthropic_schema import native_format
from ._anthropic_thinking import (
    PROVIDER,
    THINKING_TYPES,
    ReasoningOrder,
    answer_blocks,
    settle_turns,
    thinking_fields,
)
from .base import ModelRequest, ModelResponse, ReasoningDelta
from .http._convert_common import (
    FINAL_TOOL_DESCRIPTION,
    PARAGRAPH_BREAK,
    IdMap,
    StreamReader,
    WireContext,
    catalog_for,
    final_tool_name,
    image_bytes,
    input_arguments,
    parse_arguments,
    plain,
    served_model,
    too_deep_to_read,
)
from .profiles import ModelProfile

__all__ = ["DEFAULT_MAX_TOKENS", "FIRST_TURN", "MessageStream", "build_request", "check_request", "parse_message"]

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
    thinking_turns: set[int] = set()  # assistant turns that hold thinking blocks
    adaptive = profile.thinking == "adaptive"

    def tool_use(call: ToolCall) -> dict[str, Any]:
        history_tools.append(call.name)
        # Arguments that were not JSON cannot be sent as the object Anthropic needs; the tool result that answered
        # the call already told the model what was wrong with them.
        return {"type": "tool_use", "id": wire_id(call.id), "name": wire_name(call.name), "input": call.arguments}

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
                elif attachment.kind == "file":
                    add("user", _document_block(attachment))
            if not _blank(message.content):
                add("user", {"type": "text", "text": message.content})
        elif isinstance(message, AssistantMessage):
            if message.reasoning:
                # Claude's own thinking goes back in its place; see _anthropic_thinking for what is never sent.
                blocks = answer_blocks(message, tool_use, adaptive=adaptive)
                for wire_block in blocks:
                    add("assistant", wire_block)
                if any(wire_block["type"] in THINKING_TYPES for wire_block in blocks):
                    thinking_turns.add(len(turns.turns) - 1)
                continue
            text = content_for_model(message)
            if not _blank(text):
                add("assistant", {"type": "text", "text": text})
            for call in message.tool_calls:
                add("assistant", tool_use(call))
        elif isinstance(message, ToolMessage):
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": wire_id(message.tool_call_id),
                "content": message.content,
            }
            if message.is_error:
                block["is_error"] = True
                if _blank(message.content):
                    # The API answers 400 "content cannot be empty if `is_error` is true" (an imported log, an MCP
                    # server's bare isError): say what the log says, that it failed. The log keeps its content.
                    block["content"] = EMPTY_ERROR_RESULT
            add("user", block)

    messages = turns.turns
    settings = request.settings
    reasoning = settings.reasoning
    if thinking_turns or reasoning is not None:
        thinking = settle_turns(messages, turns.results, thinking_turns, reasoning is not None, adaptive=adaptive)
    else:
        thinking = False
    if messages and messages[0]["role"] == "assistant":
        messages.insert(0, {"role": "user", "content": [{"type": "text", "text": FIRST_TURN}]})
    if messages and messages[-1]["role"] == "assistant":
        # The API refuses a final assistant turn (a prefill) that ends in whitespace.
        last = messages[-1]["content"][-1]
        if last["type"] == "text":
            last["text"] = last["text"].rstrip() or "…"

    body: dict[str, Any] = {
        "model": model,
        "max_tokens": settings.max_tokens or profile.max_output_tokens or DEFAULT_MAX_TOKENS,
        "messages": messages,
    }
    if thinking and reasoning is not None:
        body.update(thinking_fields(reasoning, settings.max_tokens, profile, DEFAULT_MAX_TOKENS))
    if system:
        body["system"] = "\n\n".join(system)
    extras = settings.extras_for("anthropic") if settings.extras else {}
    # Server tools (web search, code execution…) go beside the function tools, never instead of them.
    server_tools = _server_tools(extras.pop("tools", None))
    tools: list[dict[str, Any]] = []
    for spec in request.tools:
        tool: dict[str, Any] = {"name": wire_name(spec.name), "input_schema": plain(spec.parameters)}
        if spec.description:
            tool["description"] = spec.description
        tools.append(tool)
    choice = request.tool_choice
    context = WireContext(catalog, ids)
    response_format = request.response_format
    native = None
    if response_format is not None and profile.capabilities.structured_output:
        native = native_format(response_format.schema)
    if native is not None:
        # Claude's JSON outputs: the answer is a text block holding the JSON (see _anthropic_schema).
        body["output_config"] = {**body.get("output_config", {}), "format": native}
    elif response_format is not None:
        final = final_tool_name(str(tool.get("name")) for tool in [*tools, *server_tools])
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
        if choice is not None:
            body["tool_choice"] = _tool_choice(choice, context, wire_name)
    tools += server_tools
    if tools:
        body["tools"] = tools
    if settings.temperature is not None and profile.temperature and "thinking" not in body:
        body["temperature"] = settings.temperature
    if stream:
        body["stream"] = True
    body.update(extras)
    return body, context


def _server_tools(value: Any) -> list[dict[str, Any]]:
    """The ``anthropic_tools`` extra: tool objects (server tools) sent after the function tools.

    Raises:
        UserError: when it is not a list of objects.
    """
    if value is None:
        return []
    if not isinstance(value, (list, tuple)) or not all(isinstance(tool, dict) for tool in value):
        raise UserError(
            "the anthropic_tools extra must be a list of tool objects, e.g. "
            '[{"type": "web_search_20250305", "name": "web_search"}]'
        )
    return list(value)


def _tool_choice(choice: str, context: WireContext, wire_name: Any) -> dict[str, Any]:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    name = choice if choice == context.final_tool else wire_name(choice)
    return {"type": "tool", "name": name}


def _blank(text: str | None) -> bool:
    """Whether a text would be an empty or whitespace-only text block, which the API refuses."""
    return not text or text.isspace()


def check_request(messages: Sequence[Message]) -> None:
    """Refuse, before anything is sent, what `build_request` could not send as the API requires.

    Raises:
        UserError: for a file attachment without data or of a type Anthropic does not take, or a last message
            that is blank (empty or whitespace only) with nothing attached.
    """
    for message in messages:
        if isinstance(message, UserMessage):
            for attachment in message.attachments:
                if attachment.kind == "file":
                    _document_source(attachment)
    last = next((message for message in reversed(messages) if not isinstance(message, SystemMessage)), None)
    if (
        isinstance(last, UserMessage)
        and _blank(last.content)
        and not any(attachment.kind in ("image", "file") for attachment in last.attachments)
    ):
        raise UserError(
            "the message to send is empty (or only whitespace), which Anthropic refuses: write something, or "
            "attach an image or a file"
        )


_PDF = "application/pdf"


def _document_block(attachment: Attachment) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "document", "source": _document_source(attachment)}
    if attachment.name:
        block["title"] = attachment.name
    return block


def _document_source(attachment: Attachment) -> dict[str, Any]:
    """The ``source`` of a file's document block: a PDF as base64, a text file as plain text.

    Raises:
        UserError: for a file without data, of another media type, or text that cannot be decoded.
    """
    label = attachment.name or attachment.path or "without a name"
    data = attachment.read_bytes()
    if data is None:
        if attachment.path is not None:
            raise UserError(
                f"file attachment {label!r} has no data, only the path it once came from; a path read back from a "
                "log (loaded or imported) is never read, so that a log cannot upload local files: attach the file "
                "again with Attachment('file', path=...)"
            )
        raise UserError(f"file attachment {label!r} has no data (Anthropic takes a file's bytes, not a url)")
    if not data:
        raise UserError(f"file attachment {label!r} is empty, which Anthropic refuses: attach a file with content")
    media_type, _, parameters = (attachment.media_type or "").partition(";")
    media_type = media_type.strip().lower()
    if media_type == _PDF:
        import base64

        return {"type": "base64", "media_type": _PDF, "data": base64.b64encode(data).decode("ascii")}
    if media_type.startswith("text/"):
        charset = "utf-8-sig"
        for parameter in parameters.split(";"):
            key, _, value = parameter.partition("=")
            if key.strip().lower() == "charset" and value.strip():
                charset = value.strip().strip('"')
        try:
            text = data.decode(charset)
        except (LookupError, UnicodeDecodeError):
            raise UserError(
                f"file attachment {label!r} ({attachment.media_type}) is not text in {charset}; pass the right "
                "charset in media_type (e.g. 'text/plain; charset=latin-1')"
            ) from None
        if _blank(text):
            raise UserError(f"file attachment {label!r} holds only whitespace, which Anthropic refuses")
        # The API's plain-text source takes one media type; markdown, CSV and the like are sent as what they are.
        return {"type": "text", "media_type": "text/plain", "data": text}
    raise UserError(
        f"file attachment {label!r} has media type {attachment.media_type!r}, which Anthropic does not take as a "
        "document: attach a PDF (application/pdf) or a text file (text/plain, text/markdown, text/csv…), with "
        "media_type= when its name does not say"
    )


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


class _OutputDetails(msgspec.Struct):
    thinking_tokens: int | None = None


class _Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    output_tokens_details: _OutputDetails | None = None


class _ErrorDetails(msgspec.Struct):
    error_code: Any = None


class _Error(msgspec.Struct):
    type: str | None = None
    message: str | None = None
    details: _ErrorDetails | None = None


class _Message(msgspec.Struct):
    content: list[_Block] | None = None
    model: Any = None  # the model id that answered; read as text only where it is text
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
# What a failed tool result with no text is sent as (Anthropic refuses an empty one).
EMPTY_ERROR_RESULT = "The tool failed without saying why."

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


def _bad(what: str) -> ModelError:
    """An answer that cannot be logged whole: refused, so nothing of it is lost silently or replayed wrongly."""
    return ModelError(f"Anthropic sent {what}", type="bad_response")


def _unknown_block(kind: str, index: int) -> ModelError:
    if kind in _SERVER_TOOL_BLOCKS or kind.endswith("_tool_result"):
        return ModelError(
            f"Anthropic answered with a server tool's block ({kind!r}, block {index}): server tools (web search, "
            "web fetch, code execution…) are not supported by threadline's log yet, so the answer is refused "
            "rather than logged without it; leave them out of the anthropic_tools extra",
            type="bad_response",
        )
    return _bad(
        f"a content block of a type threadline does not know ({kind!r}, block {index}); the answer is refused "
        "rather than logged without it"
    )


def _unsigned(index: int) -> ModelError:
    return _bad(
        f"a thinking block without a signature (block {index}); it could not be sent back as the API requires, so "
        "the answer is refused"
    )


def _usage(usage: _Usage | None) -> Usage | None:
    if usage is None:
        return None
    prompt = (usage.input_tokens or 0) + (usage.cache_creation_input_tokens or 0) + (usage.cache_read_input_tokens or 0)
    details = usage.output_tokens_details
    thought = (details.thinking_tokens or 0) if details is not None else 0
    return Usage(input_tokens=prompt, output_tokens=usage.output_tokens or 0, reasoning_tokens=thought)


def _response(
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
            raise _unknown_block(kind, index)
    if order is not None:
        order.place(reasoning, bool(texts))
    return _response(texts, uses, message.stop_reason, _usage(message.usage), context, reasoning, message.model)


def _thought(block: _Block, index: int) -> Reasoning:
    if block.type == "redacted_thinking":
        if not block.data:
            raise _bad(f"a redacted_thinking block without data (block {index})")
        return Reasoning(redacted=block.data, provider=PROVIDER)
    if not block.signature:
        raise _unsigned(index)
    return Reasoning(text=block.thinking or "", signature=block.signature, provider=PROVIDER)


class MessageStream(StreamReader):
    """Reads one streamed message, event by event.

    Feed each SSE event to `feed`, which returns the text to show, a `ReasoningDelta` for a piece of thinking, or
    None; `finish` then gives the complete `ModelResponse`. Tool inputs are put together from their
    ``input_json_delta`` fragments; the final-result tool's fragments are shown as text, since they are the answer.
    Thinking blocks are put together from ``thinking_delta`` and ``signature_delta``; a redacted one arrives whole.
    """

    __slots__ = ("_apart", "_input", "_model", "_order", "_output", "_thinking", "_thoughts")
    _usage: _Usage | None  # the slot StreamReader keeps, holding this API's usage struct

    def __init__(self, context: WireContext) -> None:
        super().__init__(context)
        # Token counts from ``message_delta``, which win over those of ``message_start``.
        self._output: int | None = None
        self._input: int | None = None
        self._thinking: int | None = None
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
            item = _decode_event(data)
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
                    raise _bad(f"a {delta_type} for block {item.index}, which is not a thinking block")
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
            raise _bad(f"a content_block_delta of a type threadline does not know ({delta_type!r})")
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

    def _start(self, start: _Block, index: int) -> str | ReasoningDelta | None:
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
                raise _bad(f"a redacted_thinking block without data (block {index})")
            self._thoughts[index] = [self._order.add(), [], [], start.data]
        else:
            raise _unknown_block(kind, index)
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
                raise _unsigned(index)
            reasoning.append(Reasoning(text="".join(pieces), signature=joined, provider=PROVIDER))
        if reasoning:
            self._order.place(reasoning, bool(self._parts))
        if self._usage is None and self._output is None and self._input is None:
            usage = None
        else:
            usage = self._usage or _Usage()
        if usage is not None and self._output is not None:
            usage.output_tokens = self._output
        if usage is not None and self._input is not None:
            usage.input_tokens = self._input
        if usage is not None and self._thinking is not None:
            usage.output_tokens_details = _OutputDetails(thinking_tokens=self._thinking)
        return _response(self._parts, uses, self._stop, _usage(usage), self._context, reasoning, self._model)
