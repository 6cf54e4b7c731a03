"""Pure translation between threadline's log and the OpenAI Chat Completions wire format (no I/O).

- `build_request`: a `ModelRequest` -> the JSON body of ``POST /chat/completions`` and a `WireContext` that the
  response is read with (wire tool names and tool-call ids mapped back).
- `parse_completion`: a non-streamed response body -> `ModelResponse`.
- `ChatStream`: ``chat.completion.chunk`` events -> text deltas, reasoning deltas, tool calls assembled from their
  fragments, usage and finish reason.

Reasoning: OpenAI's own Chat Completions API shows none (only ``completion_tokens_details.reasoning_tokens``, read
into `Usage.reasoning_tokens`), but compatible servers put a reasoning model's thinking beside ``content``, in
answers and in stream deltas: ``reasoning_content`` (DeepSeek's API, llama.cpp's ``llama-server --reasoning-format
deepseek``, older vLLM) or ``reasoning`` (vLLM since its rename, vllm-project/vllm#27752, which kept the old name
beside it for a while; Ollama; OpenRouter). Either is kept as `Reasoning(provider="openai")`; when a server sends
both, ``reasoning_content`` is read and the copy ignored. It is sent back, as ``reasoning_content`` on the
assistant message, only where the profile says so (``reasoning_content="send"``): DeepSeek's deepseek-reasoner
guide answers HTTP 400 "The reasoning_content is an intermediate result for display purposes only…" when it is
sent, while its newer thinking-mode guide requires it on turns that called tools ("The `reasoning_content` in the
thinking mode must be passed back to the API"). Reasoning of another family (Anthropic's signed thinking, the
Responses API's encrypted items) is never sent here, and neither is the thinking of a failed call, which was cut
off.

Gemini's OpenAI-compatible API (Gemini 3 and later) attaches a thought signature to a tool call, as
``extra_content: {"google": {"thought_signature": …}}`` on the call (in answers and in the stream's first fragment of
the call), and answers 400 "Function call is missing a thought_signature in functionCall parts" to a tool loop that
does not send it back on that call. It is kept as `Reasoning(signature=…, provider="google", id=<the call's id>)`
and sent back on its call where the profile says so (``thought_signatures="send"``: the ``gemini`` names, or the
server option); it never goes to another server.

OpenRouter (and Vercel's AI Gateway) send their thinking twice: as ``reasoning`` text and as ``reasoning_details``
entries that must go back unchanged. Where the entries come, they are what is kept (see `_reasoning_details`), and
they are sent back where the profile says so (``reasoning_details="send"``, set for those servers' addresses).

Structured output uses ``response_format: {"type": "json_schema"}`` when the profile says the model has it, and a
forced final-result tool otherwise; either way the answer comes back as JSON text content.

What is sent about tools follows the profile (`plan_tools`): the ``tool_choice`` when the caller sets none, a
named choice in place of ``"required"`` on a server that cannot honour it (when one tool is offered), streaming
only where the server can stream tool calls, and the ``content`` of assistant messages that only call tools.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec

from ..errors import CapabilityError, ModelError
from ..message_types import (
    AssistantMessage,
    Reasoning,
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
    data_url,
    final_tool_name,
    parse_arguments,
    plain,
    served_model,
    too_deep_to_read,
)
from ._error_text import upstream_text
from ._openai_files import CHAT_FILES, file_part
from ._reasoning_details import PROVIDER as DETAILS
from ._reasoning_details import DetailsStream, detail_pieces, replayed_details
from ._think_tags import ThinkTags, split_think_tags
from .base import ModelRequest, ModelResponse, ReasoningDelta
from .profiles import ModelProfile

__all__ = [
    "ChatStream",
    "ToolPlan",
    "build_request",
    "check_effort_with_tools",
    "parse_completion",
    "plan_tools",
    "replayed_reasoning",
]

_encode = msgspec.json.Encoder().encode

GOOGLE = "google"
"""The `Reasoning.provider` of Gemini's thought signatures."""


def _arguments_text(call: ToolCall) -> str:
    # Invalid argument text goes back verbatim, so the model sees exactly what it sent.
    if call.raw_arguments is not None:
        return call.raw_arguments
    return _encode(call.arguments).decode("utf-8")


class ToolPlan(NamedTuple):
    """What one request says about tools, decided from the request and the profile.

    Attributes:
        choice: ``"auto"``, ``"required"``, ``"none"``, a real tool name, or None (the field is left out).
        final_tool: The final-result tool is offered (structured output without a JSON-schema mode).
        forced_final: The choice names the final-result tool.
    """

    choice: str | None
    final_tool: bool
    forced_final: bool

    @property
    def named(self) -> bool:
        """Whether one tool is forced by name."""
        return self.forced_final or self.choice not in (None, "auto", "required", "none")


def plan_tools(request: ModelRequest, profile: ModelProfile) -> ToolPlan:
    """Decide the ``tool_choice`` of a request and whether the final-result tool is offered.

    The caller's choice wins; without one the profile's default is used (left out on OpenAI's own API). A server
    that cannot honour ``"required"`` gets the tool's name when only one tool is offered.

    Raises:
        CapabilityError: when a tool call must be forced among several tools and the server cannot do that.
    """
    tools = request.tools
    final = request.response_format is not None and not profile.capabilities.structured_output
    if not tools and not final:
        return ToolPlan(None, False, False)
    choice = request.tool_choice if request.tool_choice is not None else profile.tool_choice_default
    if final and choice in (None, "auto", "none"):
        if not tools:
            return ToolPlan(None, True, True)
        choice = "required"  # a structured answer must end in the final-result tool, after any other tools
    if choice == "required" and not profile.capabilities.tool_choice_required:
        if len(tools) == 1 and not final:
            return ToolPlan(tools[0].name, final, False)
        offered = ", ".join(spec.name for spec in tools)
        why = "a structured answer while also offering tools" if final else "a call to one of several tools"
        raise CapabilityError(
            f"this server cannot force {why} (it does not honour tool_choice='required'; offered: {offered}): "
            "offer one tool, or name the tool to call with tool_choice"
        )
    return ToolPlan(choice, final, False)


def check_effort_with_tools(request: ModelRequest, model: str, profile: ModelProfile) -> None:
    """Refuse reasoning settings on a request with function tools for a model whose Chat Completions refuses them.

    Raises:
        CapabilityError: for such a request, naming the API that takes both.
    """
    if (
        profile.effort_with_tools == "any"
        or request.settings.reasoning is None
        or profile.reasoning_request == "object"
    ):
        return
    if request.tools or plan_tools(request, profile).final_tool:
        raise CapabilityError(
            f"{model} does not take reasoning settings together with function tools on Chat Completions (OpenAI "
            f"answers 400 'Function tools with reasoning_effort are not supported'): use openai-responses:{model}, "
            "which takes both, or leave out .reasoning()"
        )


def build_request(
    request: ModelRequest, model: str, profile: ModelProfile, *, stream: bool
) -> tuple[dict[str, Any], WireContext]:
    """The Chat Completions request body for ``request``.

    Args:
        request: The request (messages exactly as sent, tools by real name).
        model: The provider's model id, e.g. ``"gpt-4o-mini"``.
        profile: The model family's profile (system role, token-limit field, structured output, what the server
            does about tools).
        stream: Ask for a server-sent-event stream (with usage in the last chunk), where the profile allows it
            for this request (the body's ``stream`` says what was asked).

    Returns:
        The body (a plain dict, ready to encode) and the context to read the response with.

    Raises:
        CapabilityError: see `plan_tools`.
    """
    catalog = catalog_for(request)
    ids = IdMap(strict=False)
    wire_name = catalog.wire
    wire_id = ids.wire
    system_role = profile.system_role
    # llama.cpp's servers refuse null and a missing key on a message that only calls tools; "" is accepted by
    # every server tested (and OpenAI's API treats it as no text). The log keeps its None.
    empty_content = profile.tool_call_content
    send_reasoning = profile.reasoning_content == "send"
    send_signatures = profile.thought_signatures == "send"
    send_details = profile.reasoning_details == "send"
    messages: list[dict[str, Any]] = []
    append = messages.append
    for message in request.messages:
        if isinstance(message, UserMessage):
            append({"role": "user", "content": _user_content(message)})
        elif isinstance(message, AssistantMessage):
            content = content_for_model(message)
            calls = message.tool_calls
            entry: dict[str, Any]
            if not calls:
                if not content:
                    continue  # an empty answer carries nothing a model could use
                entry = {"role": "assistant", "content": content}
            else:
                entry = {
                    "role": "assistant",
                    "content": content or empty_content,
                    "tool_calls": [
                        {
                            "id": wire_id(call.id),
                            "type": "function",
                            "function": {"name": wire_name(call.name), "arguments": _arguments_text(call)},
                        }
                        for call in calls
                    ],
                }
            if send_reasoning:
                thinking = replayed_reasoning(message) if message.reasoning else None
                if thinking:
                    entry["reasoning_content"] = thinking
                elif calls:
                    # A tool-calling turn with no thinking of this family (it came from another model, or this
                    # one thought nothing): a server that requires thinking back on such turns (DeepSeek's thinking
                    # mode) refuses the request without the field, and DeepSeek V4 Pro refuses it empty too.
                    entry["reasoning_content"] = NO_THINKING
            if send_signatures and calls and message.reasoning:
                _attach_signatures(message, entry["tool_calls"])
            if send_details and message.reasoning:
                entries = replayed_details(message)
                if entries:
                    entry["reasoning_details"] = entries
            append(entry)
        elif isinstance(message, ToolMessage):
            append(
                {
                    "role": "tool",
                    "tool_call_id": wire_id(message.tool_call_id),
                    "content": message.content,
                }
            )
        elif isinstance(message, SystemMessage):
            append({"role": system_role, "content": message.content})

    body: dict[str, Any] = {"model": model, "messages": messages}
    tools: list[dict[str, Any]] = [
        {
            "type": "function",
            "function": {
                "name": wire_name(spec.name),
                "description": spec.description,
                "parameters": plain(spec.parameters),
            },
        }
        for spec in request.tools
    ]
    plan = plan_tools(request, profile)
    context = WireContext(catalog, ids)
    context.think_tags = profile.think_tags == "split"
    response_format = request.response_format
    if response_format is not None and not plan.final_tool:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": response_format.name, "schema": plain(response_format.schema)},
        }
    elif response_format is not None:
        final = final_tool_name(tool["function"]["name"] for tool in tools)
        context.final_tool = final
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": final,
                    "description": FINAL_TOOL_DESCRIPTION,
                    "parameters": plain(response_format.schema),
                },
            }
        )
    if tools:
        body["tools"] = tools
        context.wire_names = frozenset(tool["function"]["name"] for tool in tools)
        choice = plan.choice
        if plan.forced_final:
            body["tool_choice"] = {"type": "function", "function": {"name": context.final_tool}}
        elif choice in ("auto", "required", "none"):
            body["tool_choice"] = choice
        elif choice is not None:
            body["tool_choice"] = {"type": "function", "function": {"name": wire_name(choice)}}
        stream = stream and profile.streams_tools(named=plan.named)
    settings = request.settings
    if settings.max_tokens is not None:
        body[profile.max_tokens_field] = settings.max_tokens
    if settings.temperature is not None and profile.temperature:
        body["temperature"] = settings.temperature
    if settings.reasoning is not None:
        # Only models whose profile has reasoning get here (`check_capabilities` refuses the others first), and
        # with tools only those that take both (`check_effort_with_tools`).
        reasoning = settings.reasoning
        if profile.reasoning_request == "object":
            # OpenRouter's field takes one of the two: a budget when one was given, else the effort.
            if reasoning.budget_tokens is not None:
                body["reasoning"] = {"max_tokens": reasoning.budget_tokens}
            else:
                body["reasoning"] = {"effort": reasoning.level()}
        else:
            body["reasoning_effort"] = reasoning.level()
    elif tools and profile.effort_with_tools == "none" and profile.reasoning_request == "effort":
        body["reasoning_effort"] = "none"  # the one effort such a model accepts along with function tools
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    if settings.extras:
        body.update(settings.extras_for("openai"))
    return body, context


def _attach_signatures(message: AssistantMessage, wire_calls: list[dict[str, Any]]) -> None:
    """Put Gemini's thought signatures back on the tool calls they came with (``extra_content``), unchanged."""
    signed = {
        piece.id: piece.signature
        for piece in message.reasoning
        if piece.provider == GOOGLE and piece.signature is not None and piece.id is not None
    }
    if not signed:
        return
    for call, wire_call in zip(message.tool_calls, wire_calls, strict=True):
        signature = signed.get(call.id)
        if signature is not None:
            wire_call["extra_content"] = {"google": {"thought_signature": signature}}


# What a tool-calling turn without this family's thinking is sent back with, where the profile sends thinking back.
NO_THINKING = " "


def replayed_reasoning(message: AssistantMessage) -> str | None:
    """The ``reasoning_content`` to send back with an assistant message: the text of its pieces that came from this
    wire family (``provider="openai"``), in order; None for a failed call (its thinking was cut off) or when there
    is none. Signed or encrypted pieces of other families are never sent, and neither is their plain text."""
    if message.error is not None:
        return None
    text = "".join(piece.text for piece in message.reasoning if piece.provider == "openai" and piece.redacted is None)
    return text or None


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    attachments = [a for a in message.attachments if a.kind in ("image", "file")]
    if not attachments:
        return message.content
    parts: list[dict[str, Any]] = []
    if message.content:
        parts.append({"type": "text", "text": message.content})
    for attachment in attachments:
        if attachment.kind == "image":
            parts.append({"type": "image_url", "image_url": {"url": data_url(attachment)}})
        else:
            filename, data = file_part(attachment, CHAT_FILES)
            parts.append({"type": "file", "file": {"filename": filename, "file_data": data}})
    return parts


# -- responses ----------------------------------------------------------------------------------------------------
# Typed structs decode faster than dicts and ignore every field threadline does not read. Every field is optional
# because OpenAI-compatible servers differ in what they leave out or send as null.


class _Function(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _ToolCall(msgspec.Struct):
    id: str | None = None
    function: _Function | None = None
    index: int | None = None
    extra_content: Any = None  # Gemini: {"google": {"thought_signature": …}}; typed loosely, as reasoning is


class _Message(msgspec.Struct):
    content: str | None = None
    tool_calls: list[_ToolCall] | None = None
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


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    completion_tokens_details: _CompletionDetails | None = None


class _Error(msgspec.Struct):
    message: str | None = None
    type: str | None = None
    code: str | int | None = None
    metadata: Any = None  # OpenRouter: the upstream provider's error (see `_error_text`)


class _Body(msgspec.Struct):
    choices: list[_Choice] | None = None
    model: Any = None  # read as text only where it is text: a server's odd value must not cost the answer
    usage: _Usage | None = None
    error: _Error | None = None


_decode_body = msgspec.json.Decoder(_Body).decode

# Error types that a compatible server may report inside a 200 response or a stream and that are worth a retry.
_RETRYABLE_ERRORS = frozenset({"server_error", "rate_limit_exceeded", "overloaded", "timeout", "internal_error"})


def _usage(usage: _Usage | None) -> Usage | None:
    if usage is None:
        return None
    details = usage.completion_tokens_details
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        reasoning_tokens=(details.reasoning_tokens or 0) if details is not None else 0,
    )


def _thinking(message: _Message) -> str | None:
    """The thinking a message or delta carries: ``reasoning_content``, else ``reasoning`` (strings only)."""
    text = message.reasoning_content
    if not (isinstance(text, str) and text):
        text = message.reasoning
    return text if isinstance(text, str) and text else None


def _error(error: _Error) -> ModelError:
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


def _decode(data: bytes | str) -> _Body:
    try:
        return _decode_body(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise ModelError(
            f"the server sent a response that is not a chat completion: {exc}", type="bad_response"
        ) from None
    except RecursionError:
        raise too_deep_to_read("the server's response") from None


def _calls(
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


def _signature(extra: Any) -> str | None:
    """The thought signature in a tool call's ``extra_content`` (Gemini), or None."""
    google = extra.get("google") if isinstance(extra, dict) else None
    signature = google.get("thought_signature") if isinstance(google, dict) else None
    return signature if isinstance(signature, str) and signature else None


def parse_completion(data: bytes | str, context: WireContext) -> ModelResponse:
    """A non-streamed ``chat.completion`` body as a `ModelResponse` (real tool names, unique ids).

    Raises:
        ModelError: for a body that is not a completion, or one that carries an error object.
    """
    body = _decode(data)
    if body.error is not None:
        raise _error(body.error)
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
    signatures = [_signature(call.extra_content) for call in message.tool_calls or ()]
    calls, final_text, signed = _calls(raw, context, signatures)
    if final_text is not None:
        content, calls, stop = final_text, [], "stop"
    # OpenRouter sends its thinking twice, as text and as entries to send back: the entries are kept, and the text
    # too when no entry carries it (only encrypted ones, say).
    entries = detail_pieces(message.reasoning_details)
    reasoning: list[Reasoning] = []
    if not any(piece.text for piece in entries):
        thinking = _thinking(message)
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
        usage=_usage(body.usage),
        stop_reason=stop,
        reasoning=reasoning,
        response_model=served_model(body.model),
    )


class ChatStream(StreamReader):
    """Reads one streamed completion, event by event.

    Feed each SSE ``data`` field to `feed`, which returns the text to show, a `ReasoningDelta` for a piece of
    thinking, or None; `finish` then gives the complete `ModelResponse`. Tool-call fragments are put together by
    their ``index``; the final-result tool's argument fragments are shown as text, since they are the answer.

    Thinking accumulates into one `Reasoning` part while it comes before the answer, as it does on every server
    known; thinking that resumes after text or a tool call starts a new part that records its ``position``. A
    chunk that carries both thinking and text (a server's chunk at the end of the thinking) returns the thinking,
    and its text is shown with the next text (or, when none follows, as the whole answer at the end).
    """

    __slots__ = ("_details", "_held", "_mark", "_model", "_signatures", "_tags", "_thinking")
    _usage: _Usage | None  # the slot StreamReader keeps, holding this API's usage struct

    def __init__(self, context: WireContext) -> None:
        super().__init__(context)
        # A <think> block opening the text, while no thinking field has come (see _think_tags).
        self._tags: ThinkTags | None = ThinkTags() if context.think_tags else None
        # Reasoning parts: (position, pieces); position None: it came before the whole answer.
        self._thinking: list[tuple[int | None, list[str]]] = []
        self._mark = 0  # how many parts the answer had when the open reasoning part last grew
        self._held = ""  # text of a chunk that also carried thinking, not shown yet
        self._signatures: dict[int, str] = {}  # Gemini's thought signatures, by the index of their call
        self._details = DetailsStream()  # OpenRouter's reasoning_details, which win over plain thinking
        self._model: Any = None  # the model id the chunks name

    def feed(self, event: str, data: str) -> str | ReasoningDelta | None:
        """Take one event; return the text it adds, the thinking it adds, or None.

        Raises:
            ModelError: for an error event or an unreadable chunk.
        """
        if data == "[DONE]":
            self.done = True
            return None
        chunk = _decode(data)
        if chunk.error is not None:
            raise _error(chunk.error)
        if chunk.usage is not None:
            self._usage = chunk.usage
        if chunk.model is not None:
            self._model = chunk.model
        if not chunk.choices:
            return None
        choice = chunk.choices[0]
        if choice.finish_reason is not None:
            self._stop = choice.finish_reason
        delta = choice.delta
        if delta is None:
            return None
        thinking: ReasoningDelta | None = None
        # OpenRouter sends its thinking twice, as plain text and in entries. What is shown follows the copy that
        # came first: the entries' text (usually in the same chunk as the plain text), or, once plain text was
        # shown, that text to the end, so entries arriving after it are not shown again. The log keeps the entries.
        shown_plain = bool(self._thinking)
        if delta.reasoning_details:
            added = self._details.feed(delta.reasoning_details)
            if added is not None and not shown_plain:
                thinking = ReasoningDelta(added[0], part=added[1], provider=DETAILS)
        if thinking is None and (shown_plain or not self._details.readable):
            thought = _thinking(delta)
            thinking = self._think(thought) if thought is not None else None
        text = delta.content or delta.refusal
        tags = self._tags
        if tags is not None:
            if (thinking is not None or self._thinking or self._details.readable) and not tags.opened:
                tags = self._tags = None  # the server sends its thinking apart: the text is all answer
            elif delta.content:
                thought, text = tags.feed(delta.content)
                if thought:
                    thinking = self._think(thought)
        if text:
            self._parts.append(text)
        if delta.tool_calls:
            final = self._context.final_tool
            for fragment in delta.tool_calls:
                index, slot = self._slot(fragment)
                signature = _signature(fragment.extra_content)
                if signature is not None:
                    self._signatures.setdefault(index, signature)
                if fragment.id and not slot[0]:
                    slot[0] = fragment.id  # the first id stands: some servers repeat it in every chunk
                function = fragment.function
                if function is not None:
                    if function.name:
                        self._take_name(slot, function.name)
                    if function.arguments:
                        slot[2].append(function.arguments)
                        if final is not None and slot[1] == final:
                            text = (text or "") + function.arguments
        if thinking is not None:
            if text:
                self._held += text
            return thinking
        if text and self._held:
            text, self._held = self._held + text, ""
        return text or None

    def _think(self, text: str) -> ReasoningDelta:
        """Add a piece of thinking to the open part, or start a part when the answer went on since the last piece."""
        thinking = self._thinking
        answered = (1 if self._parts else 0) + len(self._calls)  # the answer's parts so far: its text, its calls
        if thinking and answered == self._mark:
            thinking[-1][1].append(text)
        else:
            # Its place among the answer's parts: after every earlier reasoning part and what was answered so far.
            thinking.append((len(thinking) + answered if answered else None, [text]))
            self._mark = answered
        return ReasoningDelta(text, part=len(thinking) - 1, provider="openai")

    def _slot(self, fragment: _ToolCall) -> tuple[int, list[Any]]:
        """The call a fragment belongs to, and its index: by the fragment's ``index``; without one, by its id, else
        the call in progress."""
        calls = self._calls
        index = fragment.index
        if index is None:
            # Servers that leave the index out: a fragment with a new id starts a call, one with a known id
            # continues that call, and one with neither continues the last call.
            if fragment.id:
                index = next((key for key, slot in calls.items() if slot[0] == fragment.id), None)
            elif calls:
                index = max(calls)
            if index is None:
                index = max(calls, default=-1) + 1
        slot = calls.get(index)
        if slot is None:
            slot = calls[index] = [None, "", []]
        return index, slot

    def _take_name(self, slot: list[Any], name: str) -> None:
        """Take a call's name once: servers such as llama-cpp-python's repeat it in every chunk.

        A name that differs from one already taken is a continuation only while what was taken names no offered
        tool, for a server that streams the name in pieces.
        """
        taken = slot[1]
        if not taken:
            slot[1] = name
        elif name != taken and taken not in self._context.wire_names:
            slot[1] = taken + name

    def finish(self) -> ModelResponse:
        """The complete response.

        Raises:
            ModelError: when the stream ended before the server said it was complete (a cut stream).
        """
        if self._tags is not None:
            thought, text = self._tags.end()
            if thought:
                self._think(thought)
            if text:
                self._parts.append(text)
        signatures = [self._signatures.get(index) for index in sorted(self._calls)]  # the order of the calls
        calls, final_text, signed = _calls(self._complete_calls(), self._context, signatures)
        content: str | None = "".join(self._parts) or None
        stop = self._stop
        if final_text is not None:
            content, calls, stop = final_text, [], "stop"
        reasoning = (
            []
            if self._details.readable
            else [
                Reasoning(text="".join(pieces), provider="openai", position=position)
                for position, pieces in self._thinking
            ]
        )
        reasoning.extend(self._details.pieces())
        reasoning.extend(signed)
        return ModelResponse(
            content=content,
            tool_calls=calls,
            usage=_usage(self._usage),
            stop_reason=stop,
            reasoning=reasoning,
            response_model=served_model(self._model),
        )
