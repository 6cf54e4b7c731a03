"""The failure shapes of MCP servers, on a small server of our own (`demo_server.py`, written with the SDK's server
API): an ``isError`` result, a server that dies mid-call (restarted once on the next call), one killed between
turns, one that hangs past the timeout, one that cannot start; plus structured and image content, the server's
instructions, and streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

import pytest

from threadline import (
    AssistantMessage,
    BaseToolset,
    ToolCall,
    ToolMessage,
    Toolset,
    UserError,
    generate_text_sync,
    llm,
    request_hash,
)
from threadline.testing import ScriptedModel
from threadline.tools.mcp.toolset import MCPConnectionError, MCPToolset

from .conftest import DEMO_SERVER, HttpServer, Servers, toolset_processes, wait_for, wait_gone


def calls(*items: tuple[str, dict[str, Any]]) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=[ToolCall(id=f"call_{i}", name=name, arguments=args) for i, (name, args) in enumerate(items)]
    )


def results(messages: Any) -> list[ToolMessage]:
    return [message for message in messages if isinstance(message, ToolMessage)]


def run_calls(toolset: Any, *rounds: list[tuple[str, dict[str, Any]]]) -> list[ToolMessage]:
    """One turn in which the model makes each round of calls, then answers; the tool results, in order."""
    model = ScriptedModel([*(calls(*round_) for round_ in rounds), "done"])
    conversation = llm.model(model).tools(toolset).request("go").prompt_conversation()
    assert conversation.continuation.prompt() == "done"
    conversation.messages.validate()
    return results(conversation.messages)


def test_an_is_error_result_is_an_error_result_with_the_servers_text(demo: MCPToolset) -> None:
    failed, added = run_calls(demo, [("Demo.fail", {"reason": "the disk is full"}), ("Demo.add", {"a": 2, "b": 3})])
    assert failed.is_error and "the disk is full" in failed.content
    assert not added.is_error and added.content == "5"


def test_text_structured_and_image_content_reach_the_tool_result(demo: MCPToolset) -> None:
    picture, measured = run_calls(demo, [("Demo.picture", {}), ("Demo.measure", {})])
    assert picture.content == "a red dot\n[image: image/png, 70 bytes]"
    assert json.loads(measured.content) == {"width": 3, "height": 4}


def test_the_servers_instructions_are_the_toolsets_and_reach_the_system_prefix(demo: MCPToolset) -> None:
    assert demo.instructions == "Demo tools: add numbers with Demo.add; Demo.fail always fails."
    model = ScriptedModel(["hello"])
    llm.model(model).tools(demo).request("hi").prompt()
    assert demo.instructions in model.requests[0].messages[0].content


def test_an_mcp_toolset_is_taken_wherever_tools_are(demo: MCPToolset) -> None:
    # It is a BaseToolset (the kind every toolset is), not a Toolset of functions: the builder, generate_text and
    # request_hash take it as they take a Toolset, alone or in a list.
    assert isinstance(demo, BaseToolset) and not isinstance(demo, Toolset)
    for tools in (demo, [demo]):
        result = generate_text_sync(
            model=ScriptedModel([calls(("Demo.add", {"a": 20, "b": 22})), "42"]), prompt="add", tools=tools
        )
        assert result.text == "42"
        assert [m.content for m in results(result.messages)] == ["42"]
    with_tools = request_hash(model="openai:gpt-4o-mini", prompt="add", tools=[demo])
    assert with_tools != request_hash(model="openai:gpt-4o-mini", prompt="add")
    assert with_tools == request_hash(model="openai:gpt-4o-mini", prompt="add", tools=demo)
    assert demo.names()[:2] == ["Demo.add", "Demo.fail"] and len(demo) == len(demo.names())
    assert demo["Demo.add"].parameters["required"] == ["a", "b"]


def test_a_server_that_dies_mid_call_is_an_error_and_is_restarted_on_the_next_call(servers: Servers) -> None:
    demo = servers.demo()
    before, crashed, after, added = run_calls(
        demo, [("Demo.pid", {})], [("Demo.crash", {})], [("Demo.pid", {}), ("Demo.add", {"a": 1, "b": 1})]
    )
    assert not before.is_error
    assert crashed.is_error and "stopped during the call" in crashed.content and "restarted" in crashed.content
    assert not after.is_error and after.content != before.content  # a new process
    assert not wait_gone(int(after.content), 0) and wait_gone(int(before.content), 10)
    assert added.content == "2"


def test_a_server_killed_between_turns_is_restarted_by_the_next_call(servers: Servers) -> None:
    demo = servers.demo()
    (first,) = run_calls(demo, [("Demo.pid", {})])
    os.kill(int(first.content), signal.SIGKILL)
    assert wait_gone(int(first.content))
    # Between turns the toolset notices the death by itself (a call racing with it is a "stopped during the call"
    # error result, tested above); the next call then starts a new server.
    assert wait_for(lambda: not demo.connected)
    (second,) = run_calls(demo, [("Demo.pid", {})])
    assert not second.is_error and second.content != first.content


def test_a_server_that_cannot_restart_gives_error_results_and_the_loop_goes_on(servers: Servers, tmp_path: Any) -> None:
    script = tmp_path / "once.py"
    flag = tmp_path / "started"
    # Serves once; every later start fails at once (as a server whose config broke would).
    script.write_text(
        "import pathlib, runpy, sys\n"
        f"flag = pathlib.Path({str(flag)!r})\n"
        "if flag.exists():\n"
        "    sys.exit('refusing to start twice')\n"
        "flag.touch()\n"
        f"runpy.run_path({str(DEMO_SERVER)!r}, run_name='__main__')\n",
        encoding="utf-8",
    )
    demo = servers.stdio([sys.executable, str(script)], name="Demo")
    crashed, restart_failed, again = run_calls(demo, [("Demo.crash", {})], [("Demo.pid", {})], [("Demo.pid", {})])
    assert crashed.is_error and "stopped during the call" in crashed.content
    assert restart_failed.is_error and "could not be restarted" in restart_failed.content
    assert again.is_error


def test_a_call_that_hangs_past_the_timeout_is_cancelled_and_the_server_keeps_serving(servers: Servers) -> None:
    demo = servers.demo(timeout=1.5, start_timeout=60)  # the demo server may take longer than that to start
    hung, pid = run_calls(demo, [("Demo.hang", {})], [("Demo.pid", {})])
    assert hung.is_error and "did not answer within 1.5 s" in hung.content
    assert not pid.is_error and int(pid.content) > 0


def test_bad_arguments_are_refused_before_anything_is_sent(demo: MCPToolset) -> None:
    missing, wrong, unknown = run_calls(
        demo, [("Demo.add", {"a": 1}), ("Demo.add", {"a": "one", "b": 2}), ("Demo.nothing", {})]
    )
    assert missing.is_error and "'b' is a required property" in missing.content
    assert wrong.is_error and "a: 'one' is not of type 'integer'" in wrong.content
    assert unknown.is_error and "Unknown tool 'Demo.nothing'" in unknown.content


def test_a_server_that_cannot_start_is_a_clear_error(servers: Servers, tmp_path: Any) -> None:
    missing = servers.stdio([str(tmp_path / "no-such-server")], name="Ghost")
    with pytest.raises(MCPConnectionError, match=r"MCP server 'Ghost' could not be started: .*no-such-server"):
        missing.names()
    broken = tmp_path / "broken.py"
    broken.write_text("import sys\nprint('config file not found: /etc/demo.toml', file=sys.stderr)\nsys.exit(2)\n")
    failing = servers.stdio([sys.executable, str(broken)], name="Broken")
    with pytest.raises(MCPConnectionError, match=r"could not be started.*config file not found: /etc/demo.toml"):
        failing.names()


def test_include_and_exclude_choose_the_tools(servers: Servers) -> None:
    assert servers.demo(include=["add", "pid"]).names() == ["Demo.add", "Demo.pid"]
    assert "Demo.crash" not in servers.demo(exclude=["crash", "hang"]).names()
    with pytest.raises(UserError, match=r"MCP server 'Demo' has no tool 'subtract'"):
        servers.demo(include=["add", "subtract"]).names()


def test_bad_arguments_to_from_mcp_are_refused_at_once() -> None:
    with pytest.raises(UserError, match="either command"):
        Toolset.from_mcp()
    with pytest.raises(UserError, match="either command"):
        Toolset.from_mcp(["x"], url="http://127.0.0.1:1/mcp")
    with pytest.raises(UserError, match="non-empty list"):
        Toolset.from_mcp([])
    with pytest.raises(UserError, match="http:// or https://"):
        Toolset.from_mcp(url="ftp://example.org/mcp")
    with pytest.raises(UserError, match="timeout"):
        Toolset.from_mcp(["x"], timeout=0)
    with pytest.raises(UserError, match="list of tool names"):
        Toolset.from_mcp(["x"], include="add")


def test_streamable_http_server_on_loopback(servers: Servers, http_server: HttpServer) -> None:
    demo = Toolset.from_mcp(url=http_server.url, name="Web")
    try:
        assert "Web.add" in demo.names()
        assert demo.instructions is not None and "Demo tools" in demo.instructions
        added, failed, pid = run_calls(
            demo, [("Web.add", {"a": 20, "b": 22}), ("Web.fail", {"reason": "nope"}), ("Web.pid", {})]
        )
        assert added.content == "42"
        assert failed.is_error and "nope" in failed.content
        assert int(pid.content) == http_server.process.pid
    finally:
        demo.close()
    assert http_server.process.poll() is None  # closing our session leaves someone else's server running


def test_an_http_server_that_goes_away_is_an_error_result(servers: Servers, http_server: HttpServer) -> None:
    demo = Toolset.from_mcp(url=http_server.url, name="Web", timeout=5)
    try:
        (first,) = run_calls(demo, [("Web.add", {"a": 1, "b": 2})])
        assert first.content == "3"
        http_server.stop()
        (gone,) = run_calls(demo, [("Web.add", {"a": 1, "b": 2})])
        assert gone.is_error and "MCP server 'Web'" in gone.content
    finally:
        demo.close()


def test_closing_stops_the_server_and_a_later_call_starts_it_again(servers: Servers) -> None:
    demo = servers.demo()
    (first,) = run_calls(demo, [("Demo.pid", {})])
    assert demo.connected
    demo.close()
    assert not demo.connected and wait_gone(int(first.content), 0)
    (second,) = run_calls(demo, [("Demo.pid", {})])
    assert second.content != first.content


def test_nothing_starts_before_first_use(servers: Servers) -> None:
    demo = servers.demo()
    mark = servers.made[-1][1]
    assert not demo.connected and toolset_processes(mark) == []
    demo.connect()
    assert demo.connected and len(toolset_processes(mark)) == 1


def test_secrets_in_the_url_or_env_reach_no_message_and_no_log(servers: Servers, http_server: HttpServer) -> None:
    # Unreachable, with credentials and a token in the URL.
    unreachable = Toolset.from_mcp(url="http://ada:pw-s3cr3t@127.0.0.1:1/mcp?key=tok-9f8e7d")
    with pytest.raises(MCPConnectionError) as refused:
        unreachable.names()
    for text in (str(refused.value), repr(unreachable)):
        assert "pw-s3cr3t" not in text and "tok-9f8e7d" not in text and "ada" not in text
    assert "http://127.0.0.1:1/mcp" in str(refused.value)

    # A server that prints what it was given, then fails to start.
    tattler = servers.stdio(
        [sys.executable, "-c", "import os, sys; sys.exit('bad token ' + os.environ['DEMO_TOKEN'])"],
        env={"DEMO_TOKEN": "tok-1234567890"},
    )
    with pytest.raises(MCPConnectionError) as failed:
        tattler.names()
    assert "bad token ***" in str(failed.value) and "tok-1234567890" not in str(failed.value)

    # A reachable server whose URL carries a token, which then goes away: the log never holds the token.
    web = Toolset.from_mcp(url=f"{http_server.url}?token=tok-abcdef123", name="Web", timeout=5)
    try:
        model = ScriptedModel([calls(("Web.add", {"a": 1, "b": 2})), "ok"])
        conversation = llm.model(model).tools(web).request("add").prompt_conversation()
        web.names()
        http_server.stop()
        conversation.continuation.prompt()
        log = conversation.messages.to_json()
        assert "tok-abcdef123" not in log
        assert any(m.is_error for m in results(conversation.messages))
    finally:
        web.close()
