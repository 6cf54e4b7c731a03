"""Toolsets in traces: a call to an MCP server's tool (the repo's demo server, tests/mcp_toolsets/demo_server.py, over
stdio and streamable HTTP) is an ``execute_tool`` span carrying the MCP attributes that ``mcp.md`` asks an outer
GenAI instrumentation to add (``mcp.method.name``, ``network.transport``, ``server.*``) and the server's failures as
errors; a Pages ``generate_ui`` call is an ``execute_tool`` span whose result names the saved page."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

from tests.mcp_toolsets.conftest import HttpServer, Servers
from threadline import AssistantMessage, ToolCall, Toolset, llm, open_store
from threadline.testing import ScriptedModel
from threadline.toolboxes import Pages

from .conftest import Spans


@pytest.fixture
def servers() -> Iterator[Servers]:
    made = Servers()
    try:
        yield made
    finally:
        made.close()


def attributes(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


def call(name: str, id: str, **arguments: Any) -> AssistantMessage:
    return AssistantMessage(tool_calls=[ToolCall(id=id, name=name, arguments=arguments)])


def test_an_mcp_tool_call_over_stdio_is_an_execute_tool_span_with_mcp_attributes(
    spans: Spans, servers: Servers
) -> None:
    spans.instrument(include_content=True)
    demo = servers.demo()
    model = ScriptedModel([call("Demo.add", "m1", a=2, b=3), call("Demo.fail", "m2", reason="out of paper"), "5."])
    assert llm.model(model).tools(demo).request("Add 2 and 3").prompt() == "5."

    turn = spans.one("invoke_agent threadline")
    added = spans.one("execute_tool Demo.add")
    assert added.parent is not None and added.parent.span_id == turn.context.span_id
    assert attributes(added) | {} == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "Demo.add",
        "gen_ai.tool.call.id": "m1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Add two integers.",
        "gen_ai.tool.call.arguments": '{"a":2,"b":3}',
        "gen_ai.tool.call.result": "5",
        "mcp.method.name": "tools/call",
        "network.transport": "pipe",
    }
    failed = spans.one("execute_tool Demo.fail")
    assert failed.status.status_code == StatusCode.ERROR
    assert attributes(failed)["error.type"] == "MCPToolError"
    assert "out of paper" in (failed.status.description or "")
    assert attributes(failed)["mcp.method.name"] == "tools/call"


def test_an_mcp_tool_call_over_http_names_the_server(spans: Spans) -> None:
    http = HttpServer()
    try:
        toolset = Toolset.from_mcp(url=http.url)
        try:
            model = ScriptedModel([call("Demo.add", "h1", a=20, b=22), "42."])
            assert llm.model(model).tools(toolset).request("Add").prompt() == "42."
        finally:
            toolset.close()
    finally:
        http.stop()
    span = spans.one("execute_tool Demo.add")
    assert span.status.status_code == StatusCode.UNSET
    assert attributes(span)["mcp.method.name"] == "tools/call"
    assert attributes(span)["network.transport"] == "tcp"
    assert attributes(span)["server.address"] == "127.0.0.1"
    assert attributes(span)["server.port"] == http.port
    assert "gen_ai.tool.call.result" not in attributes(span)  # content was not asked for


def test_a_pages_generate_ui_call_is_an_execute_tool_span_naming_the_page(spans: Spans) -> None:
    spans.instrument(include_content=True)
    store = open_store("memory://")
    try:
        page = {"title": "Lasagna", "html": "<h1>Lasagna</h1>", "css": "h1 { color: teal; }", "js": ""}
        model = ScriptedModel([call("Pages.generate_ui", "p1", **page), "Here is your page."])
        conversation = llm.model(model).store(store).tools(Pages(store)).request("A lasagna page").prompt_conversation()
        assert conversation.continuation.prompt() == "Here is your page."
        (saved,) = store.list_pages(conversation.id)
    finally:
        store.close()
    span = spans.one("execute_tool Pages.generate_ui")
    assert span.status.status_code == StatusCode.UNSET
    assert attributes(span)["gen_ai.tool.call.id"] == "p1"
    assert attributes(spans.one("invoke_agent threadline"))["gen_ai.conversation.id"] == conversation.id
    result = json.loads(attributes(span)["gen_ai.tool.call.result"])
    assert result["success"] is True and result["page_id"] == saved.id
    assert json.loads(attributes(span)["gen_ai.tool.call.arguments"])["html"] == "<h1>Lasagna</h1>"
