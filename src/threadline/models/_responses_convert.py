"""Pure translation between threadline's log and the OpenAI Responses API (no I/O).

- `build_request`: a `ModelRequest` -> the JSON body of ``POST /responses`` and a `ResponsesContext`.
- `parse_response`: a non-streamed ``response`` object -> `ModelResponse`.
- `ResponsesStream`: the streamed events (``response.output_item.added``/``done``, ``response.output_text.delta``,
  ``response.reasoning_summary_text.delta``, ``response.function_call_arguments.delta``, ``response.completed``,
  ``response.incomplete``, ``response.failed``, ``error``) -> text and reasoning deltas, then the whole answer.

Stateless by design: every request carries ``store: false``, so nothing lives on OpenAI's side, and the whole
conversation is sent as input items each time. A reasoning model's thinking comes back as ``reasoning`` items whose
``encrypted_content`` (asked for with ``include: ["reasoning.encrypted_content"]``) is the only way to hand that
thinking back without server state; the function-calling guide says "for reasoning models like GPT-5 or o4-mini,
any reasoning items returned in model responses with tool calls must also be passed back with tool call outputs".
The rules followed here, each from OpenAI's documentation or from the API's own refusals:

- The leading system messages become ``instructions`` ("a system (or developer) message inserted into the model's
  context", API reference): the API puts it first with the role the model expects, so no role is guessed per
  family. A system message later in the log keeps its place as a message item with the profile's system role.
- A replayed ``reasoning`` item carries its ``id`` (the API refuses an empty one), its ``summary`` (required, may
  be empty) and its ``encrypted_content``. Reasoning without encrypted content is never sent to OpenAI: with
  ``store: false`` an id alone refers to nothing ("Item with id 'rs_…' not found. Items are not persisted when
  `store` is set to false"). A compatible server (vLLM serving gpt-oss) shows raw thinking as ``reasoning_text``
  content with no encrypted content, and reads it back from there: it gets it back that way.
- Each piece records the server that produced it (its origin, `Reasoning.provider`): ``openai-responses`` for
  OpenAI's own API, ``openai-responses@host:port`` for any other base URL. A piece goes back only to the server it
  came from: OpenAI's encrypted content is refused by vLLM (HTTP 400), and a compatible server's items are unknown
  to OpenAI (HTTP 404, see above), also when OpenAI's API is reached through a proxy at another base URL. Replayed
  pieces go each in its place in the answer (`messages.answer_parts`), and only to a model whose profile reasons
  (any other answers 400 "Reasoning input items can only be provided to a reasoning or computer use model");
  other families' and other servers' reasoning stays in the log only.
- Output items of OpenAI's hosted tools (`HOSTED_ITEMS`) ran on the server: the answer around them is kept, they
  are not. Items that wait for the caller's answer, and unknown ones, fail the answer with their type named.
- A stream may carry more than the API's events: a proxy's ``data: [DONE]``, keepalives. What carries nothing is
  ignored; an unreadable event that may have carried part of the answer is an error.
- Several summary parts of one item are logged as several `Reasoning` pieces sharing the item's id (the first
  carries the encrypted content); consecutive pieces with one id go back as one item.
- Function calls and assistant messages are sent without their ``fc_…``/``msg_…`` item ids (the log keeps the
  ``call_id`` only): under ``store: false`` an item id that the API cannot find is refused, and a ``call_id`` is what
  pairs a ``function_call_output`` with its call.
- Function tools are sent with ``strict: false``: strict mode is the Responses default, and it requires every
  property to be required and ``additionalProperties: false``, which tools made from Python signatures with
  defaults do not meet (threadline validates arguments itself before a tool runs).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import ModelError
from ..message_types import (
    AssistantMessage,
    Reasoning,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    answer_parts,
)
from ._convert_common import (
    FINAL_TOOL_DESCRIPTION,
    PARAGRAPH_BREAK,
    IdMap,
    StreamReader,
    WireContext,
    arguments_text,
    catalog_for,
    data_url,
    final_tool_name,
    parse_arguments,
    plain,
    served_model,
    too_deep_to_read,
)
from ._openai_files import RESPONSES_FILES, file_part
from .base import ModelRequest, ModelResponse, ReasoningDelta
from .profiles import ModelProfile

if TYPE_CHECKING:
    from .tool_catalog import ToolCatalog

__all__ = ["PROVIDER", "ResponsesContext", "ResponsesStream", "build_request", "parse_response"]

PROVIDER = "openai-responses"
"""The `Reasoning.provider` of reasoning pieces from OpenAI's own Responses API; another server speaking this API
is ``openai-responses@host:port`` (see `OpenAIResponsesModel.origin`)."""

_FORMAT_NAME_BAD = re.compile(r"[^A-Za-z0-9_-]")


# -- requests -----------------------------------------------------------------------------------------------------


class ResponsesContext(WireContext):
    """A `WireContext` that also knows the server the request goes to.

    Attributes:
        origin: The `Reasoning.provider` of the pieces this server's answers make (`PROVIDER` for OpenAI's own API,
            ``openai-responses@host:port`` for another server).
    """

    __slots__ = ("origin",)

    def __init__(
        self, catalog: ToolCatalog, ids: IdMap, final_tool: str | None = None, *, origin: str = PROVIDER
    ) -> None:
        super().__init__(catalog, ids, final_tool)
        self.origin = origin


def build_request(
    request: ModelRequest, model: str, profile: ModelProfile, *, stream: bool, origin: str = PROVIDER
) -> tuple[dict[str, Any], ResponsesContext]:
    """The Responses API request body for ``request``.

    Args:
        request: The request (messages exactly as sent, tools by real name).
        model: The provider's model id, e.g. ``"o4-mini"``.
        profile: The model family's profile (reasoning, structured output, temperature, system role, summaries).
        stream: Ask for a server-sent-event stream.
        origin: The server the request goes to, as in `Reasoning.provider`: `PROVIDER` for OpenAI's own API, else
            ``openai-responses@host:port`` (vLLM, Ollama, a proxy). Only reasoning pieces that this server produced
            are sent; to a server other than OpenAI's, reasoning that came as plain text goes back as
            ``reasoning_text`` content.

    Raises:
        UserError: for a file attachment this API cannot be given (see `file_part`).

    Returns:
        The body (a plain dict, ready to encode) and the context to read the response with.
    """
    catalog = catalog_for(request)
    ids = IdMap(strict=False)
    wire_name = catalog.wire
    wire_id = ids.wire
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    append = items.append
    leading = True
    capabilities = profile.capabilities
    # Only reasoning models take reasoning items: any other answers 400 "Reasoning input items can only be provided
    # to a reasoning or computer use model" (a log begun on o4-mini, continued on gpt-4.1). The log keeps them.
    replay = _Replay(items, wire_name, wire_id, capabilities.reasoning, origin)
    for message in request.messages:
        if isinstance(message, SystemMessage):
            if leading:
                instructions.append(message.content)
            else:
                append({"type": "message", "role": profile.system_role, "content": message.content})
            continue
        leading = False
        if isinstance(message, UserMessage):
            append({"type": "message", "role": "user", "content": _user_content(message)})
        elif isinstance(message, AssistantMessage):
            replay.assistant(message)
        elif isinstance(message, ToolMessage):
            append(
                {"type": "function_call_output", "call_id": wire_id(message.tool_call_id), "output": message.content}
            )

    body: dict[str, Any] = {"model": model, "input": items, "store": False}
    if instructions:
        body["instructions"] = "\n\n".join(instructions)
    if capabilities.reasoning:
        # Only reasoning models accept this ("Encrypted content is not supported with this model" otherwise).
        body["include"] = ["reasoning.encrypted_content"]
    tools: list[dict[str, Any]] = [
        {
            "type": "function",
            "name": wire_name(spec.name),
            "description": spec.description,
            "parameters": plain(spec.parameters),
            "strict": False,
        }
        for spec in request.tools
    ]
    context = ResponsesContext(catalog, ids, origin=origin)
    choice = request.tool_choice
    response_format = request.response_format
    if response_format is not None and capabilities.structured_output:
        name = _FORMAT_NAME_BAD.sub("_", response_format.name)[:64] or "answer"
        # strict: false for the same reason as the tools: the schema is the caller's own, validated afterwards.
        body["text"] = {
            "format": {"type": "json_schema", "name": name, "schema": plain(response_format.schema), "strict": False}
        }
    elif response_format is not None:
        final = final_tool_name(tool["name"] for tool in tools)
        context.final_tool = final
        tools.append(
            {
                "type": "function",
                "name": final,
                "description": FINAL_TOOL_DESCRIPTION,
                "parameters": plain(response_format.schema),
                "strict": False,
            }
        )
        if choice in (None, "auto", "none"):
            # A structured answer must end in the final-result tool, after any other tools.
            choice = final if len(tools) == 1 else "required"
    if tools:
        body["tools"] = tools
        context.wire_names = frozenset(tool["name"] for tool in tools)
        if choice in ("auto", "required", "none"):
            body["tool_choice"] = choice
        elif choice is not None:
            name = choice if choice == context.final_tool else wire_name(choice)
            body["tool_choice"] = {"type": "function", "name": name}
    settings = request.settings
    if settings.reasoning is not None:
        reasoning: dict[str, Any] = {"effort": settings.reasoning.level()}
        if profile.reasoning_summary is not None:
            reasoning["summary"] = profile.reasoning_summary
        body["reasoning"] = reasoning
    if settings.max_tokens is not None:
        body["max_output_tokens"] = settings.max_tokens
    if settings.temperature is not None and profile.temperature:
        body["temperature"] = settings.temperature
    if stream:
        body["stream"] = True
    if settings.extras:
        body.update(settings.extras_for("openai"))  # the same vendor's knobs as on Chat Completions
    return body, context


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    attachments = [a for a in message.attachments if a.kind in ("image", "file")]
    if not attachments:
        return message.content
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "input_text", "text": message.content})
    for attachment in attachments:
        if attachment.kind == "image":
            parts.append({"type": "input_image", "image_url": data_url(attachment), "detail": "auto"})
        else:
            filename, data = file_part(attachment, RESPONSES_FILES)
            if data.startswith("data:"):
                parts.append({"type": "input_file", "filename": filename, "file_data": data})
            else:
                parts.append({"type": "input_file", "file_url": data})
    return parts


class _Replay:
    """Adds an answer's parts to the input items, in the order the model produced them.

    Only reasoning pieces of the server the request goes to (``origin``) are sent. Consecutive reasoning pieces with
    one id become one ``reasoning`` item. A reasoning item that nothing of its answer follows is left out: it
    preceded no call or text it could be paired with, and the API refuses a reasoning item "provided without its
    required following item".
    """

    __slots__ = ("_items", "_origin", "_reasoning", "_wire_id", "_wire_name")

    def __init__(self, items: list[dict[str, Any]], wire_name: Any, wire_id: Any, reasoning: bool, origin: str) -> None:
        self._items = items
        self._wire_name = wire_name
        self._wire_id = wire_id
        self._reasoning = reasoning
        self._origin = origin

    def assistant(self, message: AssistantMessage) -> None:
        items = self._items
        group: list[Reasoning] = []
        pending: list[dict[str, Any]] = []  # reasoning items waiting for the part that follows them
        for part in answer_parts(message):
            if isinstance(part, Reasoning):
                if not self._reasoning or part.provider != self._origin or part.id is None:
                    # Another family's or another server's reasoning (or one without an item id) is never sent:
                    # OpenAI's encrypted content means nothing to vLLM (400), vLLM's items nothing to OpenAI (404).
                    continue
                if group and group[0].id != part.id:
                    self._close(group, pending)
                    group = []
                group.append(part)
                continue
            if group:
                self._close(group, pending)
                group = []
            items.extend(pending)
            pending.clear()
            if isinstance(part, str):
                items.append(
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": part}]}
                )
            else:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": self._wire_id(part.id),
                        "name": self._wire_name(part.name),
                        "arguments": arguments_text(part),
                    }
                )

    def _close(self, group: list[Reasoning], pending: list[dict[str, Any]]) -> None:
        """One reasoning item from the pieces of one id: with its encrypted content, or as plain text to a server
        other than OpenAI's."""
        encrypted = next((piece.redacted for piece in group if piece.redacted), None)
        ident = group[0].id
        if encrypted is not None:
            if len(group) == 1 and not group[0].text:
                summary: list[dict[str, str]] = []  # an item without a summary is logged as one piece with no text
            else:
                summary = [{"type": "summary_text", "text": piece.text} for piece in group]
            pending.append({"type": "reasoning", "id": ident, "summary": summary, "encrypted_content": encrypted})
        elif self._origin != PROVIDER and any(piece.text for piece in group):
            # gpt-oss and other open models behind vLLM show their thinking as ``reasoning_text`` content, with no
            # encrypted content; vLLM reads it back from there (exactly one content part per item). OpenAI's own
            # API never gets it: under store: false an item without encrypted content refers to nothing.
            content = [{"type": "reasoning_text", "text": piece.text} for piece in group]
            pending.append({"type": "reasoning", "id": ident, "summary": [], "content": content})


# -- responses ----------------------------------------------------------------------------------------------------
# Typed structs decode faster than dicts and ignore every field threadline does not read.


class _Part(msgspec.Struct):
    type: str = ""
    text: str | None = None
    refusal: str | None = None


class _Item(msgspec.Struct):
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


class _Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    output_tokens_details: _OutputDetails | None = None


class _Error(msgspec.Struct):
    message: str | None = None
    code: str | int | None = None
    type: str | None = None


class _Incomplete(msgspec.Struct):
    reason: str | None = None


class _Response(msgspec.Struct):
    status: str | None = None
    model: Any = None  # the model id that answered; read as text only where it is text
    output: list[_Item] | None = None
    usage: _Usage | None = None
    error: _Error | None = None
    incomplete_details: _Incomplete | None = None


class _Event(msgspec.Struct):
    type: str = ""
    output_index: int = 0
    summary_index: int = 0
    content_index: int = 0
    delta: str | None = None
    item: _Item | None = None
    response: _Response | None = None
    message: str | None = None
    code: str | int | None = None
    error: _Error | None = None


_decode_response = msgspec.json.Decoder(_Response).decode
_decode_event = msgspec.json.Decoder(_Event).decode

# Events that add nothing the deltas and the complete items do not carry: skipped by their SSE name, undecoded.
_SKIPPED = frozenset(
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


def _error(error: _Error | None, fallback: str = "the response failed") -> ModelError:
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
    return Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        reasoning_tokens=(details.reasoning_tokens or 0) if details is not None else 0,
    )


def _answer(response: _Response, items: list[_Item], context: ResponsesContext, streamed: str | None) -> ModelResponse:
    """The answer of a finished response, from its output items in order (``streamed``: the text already shown).

    Raises:
        ModelError: for a failed response, an output item of a type threadline does not read, or an incomplete
            response with nothing in it for a reason OpenAI does not document (for the documented two, the empty
            answer is returned with its stop reason, ``"length"`` or ``"content_filter"``, and its reasoning).
    """
    if response.status == "failed" or response.error is not None:
        raise _error(response.error)
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
                texts.append("".join(said))  # the parts of one message as sent; messages apart (see `_answer`)
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
    return _answer(response, response.output or [], context, None)


class ResponsesStream(StreamReader):
    """Reads one streamed response, event by event.

    Feed each SSE event to `feed`, which returns the text to show, a `ReasoningDelta` for a piece of a reasoning
    summary, or None; `finish` then gives the complete `ModelResponse`, read from the complete items of
    ``response.output_item.done`` (encrypted reasoning included), else from the output of ``response.completed``.
    The final-result tool's argument fragments are shown as text, since they are the answer.
    """

    __slots__ = ("_done_items", "_names", "_part_numbers", "_response", "_text_item", "_wire")

    def __init__(self, context: ResponsesContext) -> None:
        super().__init__(context)
        self._wire = context  # the base class keeps it as a plain `WireContext`
        self._done_items: dict[int, _Item] = {}
        self._names: dict[int, str] = {}  # function-call names by output index, from output_item.added
        # (output index, summary index, or -1 - content index for raw reasoning text) -> reasoning part
        self._part_numbers: dict[tuple[int, int], int] = {}
        self._response: _Response | None = None
        self._text_item: int | None = None  # the output index of the message item the last text came from

    def feed(self, event: str, data: str) -> str | ReasoningDelta | None:
        """Take one event; return the text or the reasoning it adds, if any.

        What carries nothing is ignored: events after the response is done (a ``data: [DONE]`` that proxies and
        compatible servers add), empty data (``event: keepalive``), and data that is not JSON under an event name
        that is not the API's (``event: ping`` / ``data: ping``).

        Raises:
            ModelError: for an ``error`` or ``response.failed`` event, or an unreadable one that may have carried
                part of the answer (JSON cut short, or an event of the API's own).
        """
        if self.done or event in _SKIPPED or not data or data == "[DONE]":
            return None
        try:
            item = _decode_event(data)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            if data.lstrip().startswith("{") or event.startswith("response.") or event == "error":
                raise ModelError(f"OpenAI sent an unreadable stream event: {exc}", type="bad_response") from None
            return None  # a keepalive of a proxy or server in between: nothing of the answer was in it
        except RecursionError:
            raise too_deep_to_read("a stream event of the Responses API") from None
        kind = item.type or event
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            delta = item.delta
            if not delta:
                return None
            if self._text_item != item.output_index:
                if self._text_item is not None:
                    delta = PARAGRAPH_BREAK + delta  # a new message item: a new paragraph, as `_answer` joins them
                self._text_item = item.output_index
            self._parts.append(delta)
            return delta
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            if not item.delta:
                return None
            numbers = self._part_numbers
            summary = kind == "response.reasoning_summary_text.delta"
            key = (item.output_index, item.summary_index if summary else -1 - item.content_index)
            part = numbers.get(key)
            if part is None:
                part = numbers[key] = len(numbers)
            return ReasoningDelta(item.delta, part=part, provider=self._wire.origin)
        if kind == "response.function_call_arguments.delta":
            final = self._context.final_tool
            if final is not None and item.delta and self._names.get(item.output_index) == final:
                return item.delta
            return None
        if kind == "response.output_item.added":
            if item.item is not None and item.item.type == "function_call":
                self._names[item.output_index] = item.item.name or ""
            return None
        if kind == "response.output_item.done":
            if item.item is not None:
                self._done_items[item.output_index] = item.item
            return None
        if kind in ("response.completed", "response.incomplete"):
            self._response = item.response or _Response(status="completed")
            self.done = True
            return None
        if kind == "response.failed":
            raise _error(item.response.error if item.response is not None else None)
        if kind == "error":
            raise _error(item.error or _Error(message=item.message, code=item.code), "the stream reported an error")
        return None  # created, in_progress, part and .done events, and event types added after this was written

    def finish(self) -> ModelResponse:
        """The complete response.

        Raises:
            ModelError: when the stream ended without ``response.completed`` (a cut stream), or for what
                `parse_response` refuses.
        """
        response = self._response
        if response is None:
            raise ModelError("the stream ended before the answer was complete", type="stream_cut", retryable=True)
        done = self._done_items
        items = [done[index] for index in sorted(done)] if done else response.output or []
        # The text shown is the answer; it is only absent when no text delta came at all.
        return _answer(response, items, self._wire, "".join(self._parts) or None)
