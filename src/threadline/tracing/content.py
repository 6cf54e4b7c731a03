"""Messages in the shapes of OpenTelemetry's GenAI conventions, for spans recorded with ``include_content=True``.

The shapes follow the conventions' JSON schemas (``gen-ai-input-messages.json`` / ``gen-ai-output-messages.json``
and their Python models, ``docs/gen-ai/non-normative/models.py`` in open-telemetry/semantic-conventions-genai):
a message is ``{"role", "parts"}``; parts are ``text`` (``content``), ``reasoning`` (``content``), ``tool_call``
(``id``, ``name``, ``arguments``) and ``tool_call_response`` (``id``, ``response``); an output message adds
``finish_reason``. Attachments, which the conventions would carry as base64 blobs, are described (kind, type, size)
rather than copied into a span. Spans carry these as JSON strings, as the conventions allow where an SDK has no
structured attribute values.

What is never written, whatever the setting: reasoning signatures and encrypted reasoning (only thinking text),
values of tool arguments whose name says they hold a secret (``api_key``, ``token``, ``password``…) — nor those
values where a tool's result or a later message repeats them — and anything shaped like an API key or URL
credentials in any text (`scrub`).

Nothing here imports OpenTelemetry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from ..messages import (
    AssistantMessage,
    Message,
    Reasoning,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    answer_parts,
)
from ..models._transport import mask_secrets, secret_forms
from ..models.base import ModelResponse, ToolSpec

__all__ = [
    "MASK",
    "answer_messages",
    "dumps",
    "input_messages",
    "output_messages",
    "scrub",
    "scrub_value",
    "secret_values",
    "tool_arguments",
    "tool_definitions",
]

MASK = "***"
_SECRET_NAME = re.compile(
    r"api[-_]?key|apikey|access[-_]?key|token|secret|passw(?:or)?d|authorization|credential|private[-_]?key|cookie",
    re.IGNORECASE,
)
# The conventions' finish reasons (FinishReason in the output schema); others pass through as they are.
_FINISH = {"tool_calls": "tool_call", "end_turn": "stop", "max_tokens": "length"}
_encode = msgspec.json.Encoder().encode


def scrub(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with ``secrets`` (see `secret_values`), anything shaped like an API key and any credentials in URLs
    masked."""
    return mask_secrets(text, secrets)


def secret_values(calls: Iterable[ToolCall]) -> tuple[str, ...]:
    """The values of the secret-named arguments of ``calls``, in every form a text could repeat them."""
    found: list[str] = []
    for call in calls:
        _collect_secrets(call.arguments, found, False)
    return secret_forms(found) if found else ()


def _collect_secrets(value: Any, found: list[str], secret: bool) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _collect_secrets(item, found, secret or (isinstance(key, str) and bool(_SECRET_NAME.search(key))))
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect_secrets(item, found, secret)
    elif secret and isinstance(value, str):
        found.append(value)


def scrub_value(value: Any) -> Any:
    """A JSON-like value with its strings scrubbed and the values of secret-named keys masked."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {
            key: MASK if isinstance(key, str) and _SECRET_NAME.search(key) else scrub_value(item)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [scrub_value(item) for item in value]
    return value


def dumps(value: Any) -> str:
    """JSON text of a value built here (its leaves are JSON types; anything else is written as its repr)."""
    try:
        return _encode(value).decode("utf-8")
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
        return _encode(_jsonable(value)).decode("utf-8")


def input_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The messages of a request, in the order they were sent."""
    messages = list(messages)
    secrets = secret_values(
        call for message in messages if isinstance(message, AssistantMessage) for call in message.tool_calls
    )
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            out.append({"role": "system", "parts": [_text(message.content, secrets)]})
        elif isinstance(message, UserMessage):
            parts: list[dict[str, Any]] = [_text(message.content, secrets)] if message.content else []
            parts.extend(_attachment(attachment) for attachment in message.attachments)
            out.append({"role": "user", "parts": parts})
        elif isinstance(message, AssistantMessage):
            out.append({"role": "assistant", "parts": [_part(part, secrets) for part in answer_parts(message)]})
        elif isinstance(message, ToolMessage):
            result = scrub(message.content, secrets)
            part = {"type": "tool_call_response", "id": message.tool_call_id, "response": result}
            out.append({"role": "tool", "parts": [part]})
    return out


def output_messages(response: ModelResponse) -> list[dict[str, Any]]:
    """What one model call answered: one output message (threadline asks for one choice)."""
    answer = AssistantMessage(
        content=response.content, tool_calls=list(response.tool_calls), reasoning=list(response.reasoning)
    )
    secrets = secret_values(answer.tool_calls)
    message: dict[str, Any] = {"role": "assistant", "parts": [_part(part, secrets) for part in answer_parts(answer)]}
    reason = response.stop_reason
    message["finish_reason"] = _FINISH.get(reason, reason) if reason else ("tool_call" if answer.tool_calls else "stop")
    return [message]


def answer_messages(message: AssistantMessage, secrets: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """A turn's answer (a logged assistant message) as output messages; ``secrets`` are masked in it."""
    parts = [_part(part, secrets) for part in answer_parts(message)]
    finish = "error" if message.error is not None else ("tool_call" if message.tool_calls else "stop")
    return [{"role": "assistant", "parts": parts, "finish_reason": finish}]


def tool_definitions(specs: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The tools offered to a model, as the conventions' function tool definitions."""
    return [
        {"type": "function", "name": spec.name, "description": spec.description, "parameters": spec.parameters}
        for spec in specs
    ]


def tool_arguments(call: ToolCall) -> Any:
    """A call's arguments, scrubbed (the raw text when they were not a JSON object)."""
    return scrub(call.raw_arguments) if call.raw_arguments is not None else scrub_value(call.arguments)


def _text(content: str, secrets: tuple[str, ...]) -> dict[str, Any]:
    return {"type": "text", "content": scrub(content, secrets)}


def _part(part: Reasoning | str | ToolCall, secrets: tuple[str, ...]) -> dict[str, Any]:
    if isinstance(part, str):
        return _text(part, secrets)
    if isinstance(part, ToolCall):
        return {"type": "tool_call", "id": part.id, "name": part.name, "arguments": tool_arguments(part)}
    # Only the thinking text: signatures and encrypted reasoning are opaque tokens for the provider.
    return {"type": "reasoning", "content": scrub(part.text, secrets)}


def _attachment(attachment: Any) -> dict[str, Any]:
    kind = attachment.kind
    if kind == "mention":
        return {"type": "mention", "ref": attachment.ref}
    described: dict[str, Any] = {"type": "attachment", "modality": kind, "mime_type": attachment.media_type}
    if attachment.name:
        described["name"] = attachment.name
    if attachment.url:
        return {"type": "uri", "modality": kind, "mime_type": attachment.media_type, "uri": scrub(attachment.url)}
    if attachment.data is not None:
        described["size"] = len(attachment.data)
    return described


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)
