"""A fake Anthropic Messages server: ``POST /v1/messages``, JSON or a stream of named events.

The shapes follow the API reference: a ``message`` object with ``content`` blocks (``text``, ``tool_use`` with
``input`` as an object), ``stop_reason`` and ``usage``; streamed, ``message_start``, then for each block
``content_block_start``, ``content_block_delta`` (``text_delta`` or ``input_json_delta`` with ``partial_json``
fragments) and ``content_block_stop``, with a ``ping`` after the first block starts, then ``message_delta`` (stop
reason and output usage) and ``message_stop``.

Like the real API it refuses (HTTP 400, ``invalid_request_error``, with the API's texts) empty or whitespace-only
text blocks, empty messages, ``document`` blocks whose source is not a documented shape, and ``cache_control``
markers the prompt cache does not take (more than four, on an empty text or a thinking block, a ``1h`` one after a
``5m`` one).
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from ._base import Answer, FakeServer, Recorded, Status, Verbatim, chunks

# Families without JSON outputs (Claude 3.x, Sonnet 4, Opus 4 and 4.1); JSON_OUTPUTS are the 4.5 names they prefix.
NO_JSON_OUTPUTS = ("claude-3", "claude-sonnet-4", "claude-opus-4")
JSON_OUTPUTS = (
    "claude-sonnet-4-5",
    "claude-sonnet-4-6",
    "claude-opus-4-5",
    "claude-opus-4-6",
    "claude-opus-4-7",
    "claude-opus-4-8",
)
_UNSUPPORTED = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
)


def _invalid(message: str) -> Status:
    return Status(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})


def _schema_problem(node: Any, where: str) -> str | None:
    """What JSON outputs refuse in a schema, or None."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            problem = _schema_problem(item, f"{where}.{index}")
            if problem:
                return problem
        return None
    if not isinstance(node, dict):
        return None
    for key in _UNSUPPORTED:
        if key in node:
            return f"{where}: '{key}' is not supported in output format schemas"
    if node.get("minItems", 0) not in (0, 1):
        return f"{where}: 'minItems' values other than 0 or 1 are not supported"
    if (node.get("type") == "object" or "properties" in node) and node.get("additionalProperties") is not False:
        return f"{where}: For 'object' type, 'additionalProperties' must be explicitly set to false"
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            for name, child in value.items():
                problem = _schema_problem(child, f"{where}.{key}.{name}")
                if problem:
                    return problem
        elif key in ("items", "anyOf", "allOf", "oneOf", "additionalProperties"):
            problem = _schema_problem(value, f"{where}.{key}")
            if problem:
                return problem
    return None


def _content_problem(messages: list[Any]) -> str | None:
    """The API's error text for content it refuses: an empty message, an empty or whitespace-only text block
    ("messages: text content blocks must be non-empty" / "… must contain non-whitespace text"), and a ``document``
    block whose source is not one of the documented shapes (base64 ``application/pdf``; plain ``text`` with
    ``media_type: "text/plain"``; a PDF ``url``), and a failed ``tool_result`` with no content."""
    for number, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not content and not (number == len(messages) - 1 and message.get("role") == "assistant"):
            return (
                f"messages.{number}: all messages must have non-empty content except for the optional final "
                "assistant message"
            )
        for index, block in enumerate(content):
            where = f"messages.{number}.content.{index}"
            if block.get("type") == "text":
                text = block.get("text")
                if not text:
                    return "messages: text content blocks must be non-empty"
                if not text.strip():
                    return "messages: text content blocks must contain non-whitespace text"
            elif block.get("type") == "tool_result" and block.get("is_error") and not block.get("content"):
                return f"{where}.tool_result: content cannot be empty if `is_error` is true"
            elif block.get("type") == "document":
                source = block.get("source") or {}
                kind = source.get("type")
                if kind == "base64":
                    if source.get("media_type") != "application/pdf":
                        return f"{where}.pdf.source.base64.media_type: Input should be 'application/pdf'"
                    if not source.get("data"):
                        return f"{where}.pdf.source.base64.data: the document is empty"
                elif kind == "text":
                    if source.get("media_type") != "text/plain":
                        return f"{where}.text.source.text.media_type: Input should be 'text/plain'"
                    if not isinstance(source.get("data"), str):
                        return f"{where}.text.source.text.data: Input should be a valid string"
                elif kind != "url":
                    return (
                        f"{where}.document.source: Input tag '{kind}' found using 'type' does not match any of the "
                        "expected tags"
                    )
    return None


def _cache_problem(body: dict[str, Any]) -> str | None:
    """What the API refuses of ``cache_control`` markers (prompt caching): more than four in one request, one on an
    empty text block or a thinking block, a ``type`` other than ``ephemeral``, a ``ttl`` other than ``5m``/``1h``,
    and a longer-lived marker after a shorter-lived one (tools, then system, then messages)."""
    blocks: list[tuple[str, dict[str, Any]]] = [
        (f"tools.{index}", tool) for index, tool in enumerate(body.get("tools") or [])
    ]
    system = body.get("system")
    if isinstance(system, list):
        blocks.extend((f"system.{index}", block) for index, block in enumerate(system))
    for number, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        if isinstance(content, list):
            blocks.extend((f"messages.{number}.content.{index}", block) for index, block in enumerate(content))
    found = [(where, block, block["cache_control"]) for where, block in blocks if "cache_control" in block]
    if len(found) > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {len(found)}."
    seconds = {"5m": 300, "1h": 3600}
    longest = 3600
    for where, block, control in found:
        kind = block.get("type")
        if kind in ("thinking", "redacted_thinking"):
            return f"{where}.{kind}.cache_control: Extra inputs are not permitted"
        if kind == "text" and not block.get("text"):
            return f"{where}.text: cache_control cannot be set for empty text blocks"
        if not isinstance(control, dict) or control.get("type") != "ephemeral":
            return f"{where}.cache_control.type: Input should be 'ephemeral'"
        ttl = control.get("ttl", "5m")
        if ttl not in seconds:
            return f"{where}.cache_control.ttl: Input should be '5m' or '1h'"
        if seconds[ttl] > longest:
            return "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block"
        longest = seconds[ttl]
    return None


def tool_id(tool: Any) -> str:
    return tool.id or "toolu_01" + secrets.token_hex(11)


class FakeAnthropic(FakeServer):
    """The fake Anthropic server; point ``AnthropicModel(base_url=server.base_url)`` at it."""

    path = "/v1/messages"
    name = "anthropic"

    @property
    def base_url(self) -> str:
        return self.root

    def error_body(self, status: int) -> Any:
        kinds = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            429: "rate_limit_error",
            500: "api_error",
            529: "overloaded_error",
        }
        messages = {401: "invalid x-api-key", 429: "Number of request tokens has exceeded your per-minute rate limit"}
        kind = kinds.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": messages.get(status, kind.replace("_", " "))}}

    def refuse(self, request: Recorded) -> Status | None:
        """What the API refuses in ``messages`` (see `_content_problem`); then Claude's JSON outputs
        (``output_config.format``): only the families that have them, and only the JSON Schema subset they take
        (every object with ``additionalProperties: false``; no numeric bounds, string lengths or array bounds
        beyond ``minItems`` 0 or 1), as Anthropic's structured-outputs guide lists."""
        body = request.json or {}
        problem = _content_problem(body.get("messages") or []) or _cache_problem(body)
        if problem:
            return _invalid(problem)
        output_format = (body.get("output_config") or {}).get("format")
        if output_format is None:
            return None
        model = str(body.get("model", "")).rsplit("/", 1)[-1]
        if model.startswith(NO_JSON_OUTPUTS) and not model.startswith(JSON_OUTPUTS):
            return _invalid(f"'{model}' does not support output_config.format.")
        if output_format.get("type") != "json_schema" or not isinstance(output_format.get("schema"), dict):
            return _invalid("output_config.format: Input should be a valid json_schema format")
        problem = _schema_problem(output_format["schema"], "output_config.format.schema")
        return _invalid(problem) if problem else None

    def _blocks(self, answer: Answer) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if answer.text:
            blocks.append({"type": "text", "text": answer.text})
        for tool in answer.tool_calls:
            try:
                value = json.loads(tool.arguments)
            except ValueError:
                value = tool.arguments  # only a stream can carry invalid JSON; see render_events
            except RecursionError:
                value = Verbatim(tool.arguments)  # valid JSON, nested too deeply for json to read it
            blocks.append({"type": "tool_use", "id": tool_id(tool), "name": tool.name, "input": value})
        return blocks

    def render_json(self, answer: Answer, request: Recorded) -> Any:
        body = request.json or {}
        return {
            "id": "msg_01" + secrets.token_hex(11),
            "type": "message",
            "role": "assistant",
            "model": self.snapshot or body.get("model", "claude-haiku-4-5"),
            "content": self._blocks(answer),
            "stop_reason": "tool_use" if answer.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens},
        }

    def render_events(self, answer: Answer, request: Recorded) -> list[tuple[str | None, str]]:
        body = request.json or {}

        def event(kind: str, data: dict[str, Any]) -> tuple[str, str]:
            return kind, json.dumps({"type": kind, **data})

        start = {
            "id": "msg_01" + secrets.token_hex(11),
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": self.snapshot or body.get("model", "claude-haiku-4-5"),
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": answer.input_tokens, "output_tokens": 1},
        }
        events = [event("message_start", {"message": start})]
        index = 0
        if answer.text:
            events.append(event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}))
            events.append(event("ping", {}))
            for piece in chunks(answer.text):
                events.append(
                    event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": piece}})
                )
            events.append(event("content_block_stop", {"index": 0}))
            index = 1
        for tool in answer.tool_calls:
            block = {"type": "tool_use", "id": tool_id(tool), "name": tool.name, "input": {}}
            events.append(event("content_block_start", {"index": index, "content_block": block}))
            if index == 0:
                events.append(event("ping", {}))
            events.append(
                event(
                    "content_block_delta", {"index": index, "delta": {"type": "input_json_delta", "partial_json": ""}}
                )
            )
            for piece in chunks(tool.arguments, 7):
                delta = {"type": "input_json_delta", "partial_json": piece}
                events.append(event("content_block_delta", {"index": index, "delta": delta}))
            events.append(event("content_block_stop", {"index": index}))
            index += 1
        stop = "tool_use" if answer.tool_calls else "end_turn"
        events.append(
            event(
                "message_delta",
                {
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": answer.output_tokens},
                },
            )
        )
        events.append(event("message_stop", {}))
        return events
