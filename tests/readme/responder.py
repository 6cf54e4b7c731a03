"""Fake OpenAI and Anthropic servers that answer any request in the provider's real wire format, for running the
README's examples: no script, so an example can change without its test changing.

Each answer follows from the request alone: a requested JSON schema gets a value of that schema; offered tools are
called one by one (the forced one first, each once since the latest user message), each with arguments made from
its schema; then the model answers in text. Requests are recorded as the fake servers record them.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.providers.servers import Answer, FakeAnthropic, FakeOpenAI, FakeResponses, ToolUse
from tests.providers.servers._base import Recorded

__all__ = ["AnyAnthropic", "AnyOpenAI", "example_value"]

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
TEXT = "Done: 22 C and sunny."


def example_value(schema: Any, defs: dict[str, Any] | None = None, depth: int = 0) -> Any:
    """A value of a JSON schema, as a model would fill it in (strings "Paris", numbers 5)."""
    if not isinstance(schema, dict) or depth > 8:
        return "Paris"
    defs = {**(defs or {}), **schema.get("$defs", {})}
    if "$ref" in schema:
        return example_value(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), defs, depth + 1)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [option for option in schema.get(key, ()) if option.get("type") != "null"]
        if options:
            return example_value(options[0], defs, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        return {name: example_value(sub, defs, depth + 1) for name, sub in properties.items()}
    if kind == "array":
        return [example_value(schema.get("items", {}), defs, depth + 1)]
    if kind in ("number", "integer"):
        return 5
    if kind == "boolean":
        return True
    return "Paris"


def _next_answer(
    tools: dict[str, Any], called: set[str], forced: str | None, schema: dict[str, Any] | None, reply_in_tool: bool
) -> Answer:
    """What the model says: a forced or not yet called tool's call, else the answer (JSON of ``schema`` if given)."""
    if forced is not None and forced in tools and forced not in called:
        return Answer(tool_calls=(ToolUse(forced, json.dumps(example_value(tools[forced]))),))
    for name, parameters in tools.items():
        if name not in called and not (reply_in_tool and name != forced):
            return Answer(tool_calls=(ToolUse(name, json.dumps(example_value(parameters))),))
    return Answer(json.dumps(example_value(schema)) if schema is not None else TEXT)


def _chat_answer(body: dict[str, Any]) -> Answer:
    messages = body.get("messages") or []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    called = {call["function"]["name"] for m in messages[last_user + 1 :] for call in (m.get("tool_calls") or ())}
    tools = {t["function"]["name"]: t["function"].get("parameters", {}) for t in body.get("tools") or ()}
    choice = body.get("tool_choice")
    forced = choice["function"]["name"] if isinstance(choice, dict) else None
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
    return _next_answer(tools, called, forced, schema, reply_in_tool=forced is not None)


def _responses_answer(body: dict[str, Any]) -> Answer:
    items = body.get("input") or []
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    last_user = max((i for i, item in enumerate(items) if item.get("role") == "user"), default=-1)
    called = {item["name"] for item in items[last_user + 1 :] if item.get("type") == "function_call"}
    tools = {t["name"]: t.get("parameters", {}) for t in body.get("tools") or () if t.get("type") == "function"}
    choice = body.get("tool_choice")
    forced = choice.get("name") if isinstance(choice, dict) else None
    schema = ((body.get("text") or {}).get("format") or {}).get("schema")
    return _next_answer(tools, called, forced, schema, reply_in_tool=forced is not None)


class AnyOpenAI(FakeResponses):
    """OpenAI's Chat Completions and Responses APIs on one base URL (as ``OPENAI_BASE_URL`` names both), answering
    any request."""

    name = "any-openai"

    def serves(self, path: str) -> bool:
        return path in (CHAT, RESPONSES)

    def refuse(self, request: Recorded) -> Any:
        return super().refuse(request) if request.path == RESPONSES else FakeOpenAI.refuse(self, request)

    def render_json(self, answer: Answer, request: Recorded) -> Any:
        if request.path == RESPONSES:
            return super().render_json(answer, request)
        return FakeOpenAI.render_json(self, answer, request)

    def render_events(self, answer: Answer, request: Recorded) -> list[tuple[str | None, str]]:
        if request.path == RESPONSES:
            return super().render_events(answer, request)
        return FakeOpenAI.render_events(self, answer, request)

    async def _respond(self, writer: asyncio.StreamWriter, request: Recorded, item: Any) -> bool:
        body = request.json or {}
        answer = _responses_answer(body) if request.path == RESPONSES else _chat_answer(body)
        return await super()._respond(writer, request, answer)


class AnyAnthropic(FakeAnthropic):
    """Anthropic's Messages API, answering any request."""

    name = "any-anthropic"

    async def _respond(self, writer: asyncio.StreamWriter, request: Recorded, item: Any) -> bool:
        body = request.json or {}
        messages = body.get("messages") or []

        def said_by_user(message: dict[str, Any]) -> bool:
            content = message.get("content")
            if message.get("role") != "user":
                return False
            return isinstance(content, str) or any(block.get("type") != "tool_result" for block in content)

        last_user = max((i for i, m in enumerate(messages) if said_by_user(m)), default=-1)
        called = {
            block["name"]
            for m in messages[last_user + 1 :]
            if isinstance(m.get("content"), list)
            for block in m["content"]
            if block.get("type") == "tool_use"
        }
        tools = {t["name"]: t["input_schema"] for t in body.get("tools") or () if "input_schema" in t}
        choice = body.get("tool_choice") or {}
        forced = choice.get("name") if choice.get("type") == "tool" else None
        schema = ((body.get("output_config") or {}).get("format") or {}).get("schema")
        answer = _next_answer(tools, called, forced, schema, reply_in_tool=forced is not None)
        return await super()._respond(writer, request, answer)
