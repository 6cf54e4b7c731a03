"""Tools described by a JSON schema (`Tool.from_schema`, what MCP tools are made of) and toolsets bound to the
conversation they serve (`Toolset.bind`, how ``Pages`` keeps pages per conversation)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from threadline import AssistantMessage, Conversation, Tool, ToolCall, ToolMessage, Toolset, UserError, llm
from threadline.testing import ScriptedModel
from threadline.tools import ToolArgumentsError

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "A city name"}, "days": {"type": "integer"}},
    "required": ["city"],
}


def forecast(**arguments: Any) -> str:
    return f"sunny in {arguments['city']} for {arguments.get('days', 1)} day(s)"


def needs_city(arguments: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(arguments.get("city"), str):
        raise ToolArgumentsError("city: a city name is required")
    return dict(arguments)


def run(tool: Tool, *arguments: dict[str, Any]) -> tuple[ScriptedModel, list[ToolMessage]]:
    calls = [ToolCall(id=f"c{i}", name=tool.name, arguments=args) for i, args in enumerate(arguments)]
    model = ScriptedModel([AssistantMessage(tool_calls=calls), "ok"])
    conversation = llm.model(model).tools(tool).request("weather?").prompt_conversation()
    conversation.continuation.prompt()
    return model, [m for m in conversation.messages if isinstance(m, ToolMessage)]


def test_the_schema_is_offered_as_given_and_the_validator_judges_the_arguments() -> None:
    tool = Tool.from_schema(
        forecast, name="Weather.forecast", parameters=SCHEMA, description="The forecast", validator=needs_city
    )
    model, (good, bad) = run(tool, {"city": "Oslo", "days": 2}, {"days": 2})
    spec = model.requests[0].tools[0]
    assert (spec.name, spec.description, spec.parameters) == ("Weather.forecast", "The forecast", SCHEMA)
    assert not good.is_error and good.content == "sunny in Oslo for 2 day(s)"
    assert bad.is_error and "city: a city name is required" in bad.content


def test_without_a_validator_the_arguments_reach_the_handler_unchecked() -> None:
    seen: list[dict[str, Any]] = []

    async def handler(**arguments: Any) -> str:
        seen.append(arguments)
        return "ok"

    tool = Tool.from_schema(handler, name="loose", parameters={"type": "object"})
    _, (result,) = run(tool, {"anything": [1, 2]})
    assert not result.is_error and seen == [{"anything": [1, 2]}]


def test_from_schema_refuses_what_cannot_be_a_tool() -> None:
    with pytest.raises(UserError, match="callable"):
        Tool.from_schema("nope", name="x", parameters={})  # type: ignore[arg-type]
    with pytest.raises(UserError, match="non-empty name"):
        Tool.from_schema(forecast, name="", parameters={})
    with pytest.raises(UserError, match="JSON schema object"):
        Tool.from_schema(forecast, name="x", parameters=[])  # type: ignore[arg-type]


class Greeter(Toolset):
    """A toolset whose tool says which conversation it serves."""

    def __init__(self) -> None:
        super().__init__([self.greeting_tool("nobody")], name="Greeter", instructions="Greet people.")
        self.bound: list[str] = []

    @staticmethod
    def greeting_tool(who: str) -> Tool:
        def greet() -> str:
            """Say hello."""
            return f"hello from {who}"

        return Tool(greet, name="Greeter.greet")

    def bind(self, conversation: Conversation) -> Toolset:
        self.bound.append(conversation.id)
        return Toolset([self.greeting_tool(conversation.id)], name=self.name, instructions=self.instructions)


def test_a_toolset_is_bound_to_the_conversation_before_every_request() -> None:
    greeter = Greeter()
    model = ScriptedModel([AssistantMessage(tool_calls=[ToolCall(id="c1", name="Greeter.greet", arguments={})]), "hi"])
    conversation = llm.model(model).tools(greeter).request("greet").prompt_conversation()
    conversation.continuation.prompt()
    (result,) = [m for m in conversation.messages if isinstance(m, ToolMessage)]
    assert result.content == f"hello from {conversation.id}"
    assert greeter.bound == [conversation.id, conversation.id]  # once per request
    assert "Greet people." in model.requests[0].messages[0].content
