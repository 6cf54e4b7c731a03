"""Pure translation between threadline's log and the OpenAI Responses API (no I/O); this module holds the request.

- `build_request`: a `ModelRequest` -> the JSON body of ``POST /responses`` and a `ResponsesContext`.
- `parse_response` (`_responses_response`): a non-streamed ``response`` object -> `ModelResponse`.
- `ResponsesStream` (`_responses_stream`): the streamed events (``response.output_item.added``/``done``,
  ``response.output_text.delta``, ``response.reasoning_summary_text.delta``, ``response.function_call_arguments.delta``,
  ``response.completed``, ``response.incomplete``, ``response.failed``, ``error``) -> text and reasoning deltas, then
  the whole answer.

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

from ...message_types import (
    AssistantMessage,
    Reasoning,
    SystemMessage,
    ToolMessage,
    UserMessage,
    answer_parts,
)
from ..base import ModelRequest
from ..http._convert_common import (
    FINAL_TOOL_DESCRIPTION,
    IdMap,
    WireContext,
    arguments_text,
    catalog_for,
    data_url,
    final_tool_name,
    plain,
)
from ..profiles import ModelProfile
from ._files import RESPONSES_FILES, file_part

if TYPE_CHECKING:
    from ..tool_catalog import ToolCatalog


__all__ = ["PROVIDER", "ResponsesContext", "build_request"]

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
