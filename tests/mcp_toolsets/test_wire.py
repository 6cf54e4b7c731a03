"""An MCP tool loop through the fake OpenAI and Anthropic servers (real HTTP on 127.0.0.1): the server's tools are
offered under provider-safe wire names, the model calls them by those names, and the log and the user only ever see
the real ``<Name>.<tool>`` names. The turn runs on the test's own event loop (the async API), while the MCP session
lives on its connection's loop."""

from __future__ import annotations

from typing import Any

import pytest

from tests.providers.servers import Answer, FakeAnthropic, FakeOpenAI, FakeServer, ToolUse
from threadline import AssistantMessage, ToolMessage, llm
from threadline.models.anthropic import AnthropicModel
from threadline.models.openai import OpenAIModel

from .conftest import Servers

KEY = "sk-test-MCP0123456789abcdef"


def make_model(provider: str, server: FakeServer) -> Any:
    if provider == "openai":
        return OpenAIModel("gpt-4o-mini", base_url=f"{server.root}/v1", api_key=KEY, retry_base_delay=0.01)
    return AnthropicModel("claude-haiku-4-5", base_url=server.root, api_key=KEY, retry_base_delay=0.01)


def offered_names(provider: str, body: dict[str, Any]) -> list[str]:
    if provider == "openai":
        return [tool["function"]["name"] for tool in body["tools"]]
    return [tool["name"] for tool in body["tools"]]


def tool_results_sent(provider: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """(call id, content) of every tool result in a request body."""
    if provider == "openai":
        return [(m["tool_call_id"], m["content"]) for m in body["messages"] if m["role"] == "tool"]
    found = []
    for turn in body["messages"]:
        if isinstance(turn["content"], list):
            for block in turn["content"]:
                if block.get("type") == "tool_result":
                    content = block["content"]
                    text = content if isinstance(content, str) else "".join(part["text"] for part in content)
                    found.append((block["tool_use_id"], text))
    return found


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_an_mcp_tool_loop_round_trips_the_wire_names(provider: str, servers: Servers) -> None:
    demo = await servers.demo().aconnect()
    server: FakeServer = (FakeOpenAI() if provider == "openai" else FakeAnthropic()).start()
    model = make_model(provider, server)
    try:
        server.add(
            Answer(
                tool_calls=(
                    ToolUse("Demo_add", '{"a": 19, "b": 23}', id="toolu_add"),
                    ToolUse("Demo_fail", '{"reason": "not today"}', id="toolu_fail"),
                )
            ),
            Answer(tool_calls=(ToolUse("Demo_picture", "{}", id="toolu_pic"),)),
            Answer("19 + 23 = 42."),
        )
        conversation = llm.model(model).tools(demo).request("Add 19 and 23").prompt_conversation()
        messages = [message async for message in conversation]

        calls = [call for m in messages if isinstance(m, AssistantMessage) for call in m.tool_calls]
        assert [call.name for call in calls] == ["Demo.add", "Demo.fail", "Demo.picture"]
        results = [m for m in messages if isinstance(m, ToolMessage)]
        assert [(r.tool_name, r.content, r.is_error) for r in results] == [
            ("Demo.add", "42", False),
            ("Demo.fail", results[1].content, True),
            ("Demo.picture", "a red dot\n[image: image/png, 70 bytes]", False),
        ]
        assert "not today" in results[1].content
        assert conversation.text == "19 + 23 = 42."

        bodies = server.bodies
        assert len(bodies) == 3
        assert "Demo_add" in offered_names(provider, bodies[0]) and "Demo_picture" in offered_names(provider, bodies[0])
        assert all("." not in name for name in offered_names(provider, bodies[0]))
        sent = dict(tool_results_sent(provider, bodies[2]))
        assert sent["toolu_add"] == "42" and sent["toolu_pic"] == results[2].content
        assert "not today" in sent["toolu_fail"]
        conversation.messages.validate()
    finally:
        await model.aclose()
        server.stop()
        await demo.aclose()
