"""Pure translation between threadline's log and the Anthropic Messages wire format (no I/O); this module holds
the request.

- `build_request`: a `ModelRequest` -> the JSON body of ``POST /v1/messages`` and a `WireContext`.
- `parse_message` (`_response`): a non-streamed response body -> `ModelResponse`.
- `MessageStream` (`_stream`): the streamed events (``message_start``, ``content_block_start``/``delta``/``stop``,
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
  (`_schema`); otherwise a forced final-result tool, whose input comes back as the answer's JSON text, and
  no tool call is logged for it.
- Claude's thinking (``thinking`` and ``redacted_thinking`` blocks) is kept in order as `Reasoning` pieces, with a
  ``position`` for a piece that came after a text or a tool call (interleaved thinking), and goes back exactly as
  received; the rules of thinking on the wire (a budget or adaptive thinking, by the family's profile) live in
  `_thinking`. A content block of a type this module
  does not know is refused (``bad_response``) rather than dropped.
- With ``prompt_cache`` (``.cache(prompt=True)``), ``cache_control`` breakpoints mark the stable prefix (at most
  four: the system prompt, then sent as one text block; the newest turn; the end of the previous request; the last
  tool), see `place_breakpoints`. Without it the body carries none and ``system`` stays a string.
- Citations (``citations`` on text blocks, ``citations_delta`` in a stream) are not kept: the cited text is.
- A ``rate_limit_error`` whose ``details.error_code`` is ``enforced_spend_limit_reached`` (the organization's
  monthly spend limit), in a stream or a body, is not retryable (``type="quota"``, as the transport makes such an
  HTTP 429): access resumes only with the next month or a higher tier.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ...attachments import Attachment
from ...errors import UserError
from ...message_types import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    content_for_model,
)
from ..base import ModelRequest
from ..http._convert_common import (
    FINAL_TOOL_DESCRIPTION,
    IdMap,
    WireContext,
    catalog_for,
    final_tool_name,
    image_bytes,
    plain,
)
from ..profiles import ModelProfile
from ._schema import native_format
from ._thinking import (
    THINKING_TYPES,
    answer_blocks,
    settle_turns,
    thinking_fields,
)

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "EMPTY_ERROR_RESULT",
    "FIRST_TURN",
    "MAX_BREAKPOINTS",
    "build_request",
    "check_request",
    "place_breakpoints",
]

DEFAULT_MAX_TOKENS = 4_096
FIRST_TURN = "(conversation start)"
MAX_BREAKPOINTS = 4
"""The most blocks one request may mark ``cache_control`` (the API refuses a fifth)."""

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
                # Claude's own thinking goes back in its place; see _thinking for what is never sent.
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
        # Claude's JSON outputs: the answer is a text block holding the JSON (see _schema).
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
    if settings.prompt_cache:
        place_breakpoints(body, settings.prompt_cache)
    body.update(extras)
    return body, context


def place_breakpoints(body: dict[str, Any], setting: bool | str) -> None:
    """Mark the stable prefix of a request body for Anthropic's prompt cache (``prompt_cache``), in place.

    The API caches the prefix up to each block marked ``cache_control``, in the order it reads a request: tools,
    system, messages. At most `MAX_BREAKPOINTS` go, most useful first, and a server tool the caller marked
    already counts against them:

    1. the system prompt (sent as one text block to carry it), which caches the tools with it;
    2. the newest turn's last block, so the next request of the conversation can read it all;
    3. the end of the previous request: the turn before the newest assistant turn, which that request ended with,
       so this request hits the entry it wrote even when the round added more blocks than the API looks back over;
    4. the last tool definition, which keeps the tools cached when the system prompt changes (another mode).

    A marker goes on the last block of a turn that can carry one (never on a thinking block) and on a copy of it,
    so nothing the log or the caller holds is changed. Each request marks the previous one's end where that one
    marked its newest turn; a marker older than that moves on (markers are not part of what is cached).

    Args:
        body: The request body (``messages``, and ``system`` and ``tools`` when there are any).
        setting: True (the API's default lifetime) or a lifetime, ``"5m"`` or ``"1h"``.
    """
    marker: dict[str, Any] = {"type": "ephemeral"} if setting is True else {"type": "ephemeral", "ttl": setting}
    tools: list[dict[str, Any]] = body.get("tools") or []
    room = MAX_BREAKPOINTS - sum(1 for tool in tools if "cache_control" in tool)
    turns: list[dict[str, Any]] = body["messages"]
    system = body.get("system")
    if room > 0 and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": marker}]
        room -= 1
    newest = len(turns) - 1
    answered = next((index for index in range(newest - 1, 0, -1) if turns[index]["role"] == "assistant"), 0)
    for index in (newest, answered - 1):
        if room > 0 and index >= 0 and _mark_turn(turns[index], marker):
            room -= 1
    if room > 0 and tools and "cache_control" not in tools[-1]:
        tools[-1] = {**tools[-1], "cache_control": marker}


def _mark_turn(turn: dict[str, Any], marker: dict[str, Any]) -> bool:
    """Put ``marker`` on (a copy of) the last block of ``turn`` that can carry one; whether there was one."""
    content = turn["content"]
    for index in range(len(content) - 1, -1, -1):
        block = content[index]
        if block["type"] not in THINKING_TYPES:
            content[index] = {**block, "cache_control": marker}
            return True
    return False


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


# What a failed tool result with no text is sent as (Anthropic refuses an empty one).
EMPTY_ERROR_RESULT = "The tool failed without saying why."
