"""Pure translation between threadline's log and the OpenAI Chat Completions wire format (no I/O).

- `build_request`: a `ModelRequest` -> the JSON body of ``POST /chat/completions`` and a `WireContext` that the
  response is read with (wire tool names and tool-call ids mapped back).
- `parse_completion` (`_chat_response`): a non-streamed response body -> `ModelResponse`.
- `ChatStream` (`_chat_stream`): ``chat.completion.chunk`` events -> text deltas, reasoning deltas, tool calls
  assembled from their fragments, usage and finish reason.

This module holds the request; what follows says how reasoning is read and sent back, in all three.

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

from ...errors import CapabilityError
from ...message_types import (
    AssistantMessage,
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
    data_url,
    final_tool_name,
    plain,
)
from ..http._reasoning_details import replayed_details
from ..profiles import ModelProfile
from ._files import CHAT_FILES, file_part

__all__ = ["GOOGLE", "ToolPlan", "build_request", "check_effort_with_tools", "plan_tools", "replayed_reasoning"]

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
