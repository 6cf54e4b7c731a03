"""`Toolset.from_mcp` against MCP servers nobody here wrote, installed from PyPI (the ``dev`` extra):
``mcp-server-time`` and ``mcp-server-git`` over stdio. Their tools are listed with the server's own schema and
description, a tool loop calls them by ``<Name>.<tool>``, their answers land in the log, and bad arguments come back
as error results the loop survives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from threadline import AssistantMessage, ToolCall, ToolMessage, llm
from threadline.testing import ScriptedModel
from threadline.tools.mcp.toolset import MCPToolset

from .conftest import Servers


def calls(*items: tuple[str, dict[str, Any]]) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=[ToolCall(id=f"call_{i}", name=name, arguments=args) for i, (name, args) in enumerate(items)]
    )


def results(messages: Any) -> list[ToolMessage]:
    return [message for message in messages if isinstance(message, ToolMessage)]


@pytest.fixture(scope="module")
def time_tools(shared: Servers) -> MCPToolset:
    return shared.time(name="Time")


def test_time_server_tools_are_listed_with_the_servers_schema_and_description(time_tools: MCPToolset) -> None:
    assert time_tools.name == "Time"
    assert time_tools.names() == ["Time.get_current_time", "Time.convert_time"]
    tool = time_tools["Time.get_current_time"]
    assert tool.description == "Get current time in a specific timezone"
    assert tool.parameters["required"] == ["timezone"]
    assert "IANA timezone name" in tool.parameters["properties"]["timezone"]["description"]
    assert time_tools["Time.convert_time"].parameters["required"] == ["source_timezone", "time", "target_timezone"]


def test_the_servers_own_name_is_the_default_prefix(servers: Servers) -> None:
    assert servers.time().names() == ["mcp-time.get_current_time", "mcp-time.convert_time"]


def test_a_tool_loop_calls_the_time_server_and_logs_its_answer(time_tools: MCPToolset) -> None:
    model = ScriptedModel(
        [
            calls(
                ("Time.get_current_time", {"timezone": "Europe/Paris"}),
                ("Time.convert_time", {"source_timezone": "Europe/Paris", "time": "12:00", "target_timezone": "UTC"}),
            ),
            "It is noon in Paris.",
        ]
    )
    conversation = llm.model(model).tools(time_tools).request("What time is it in Paris?").prompt_conversation()
    assert conversation.continuation.prompt() == "It is noon in Paris."

    now, converted = results(conversation.messages)
    assert not now.is_error and not converted.is_error
    assert now.tool_name == "Time.get_current_time"
    current = json.loads(now.content)
    assert current["timezone"] == "Europe/Paris" and "T" in current["datetime"]
    assert json.loads(converted.content)["target"]["timezone"] == "UTC"
    # The model was offered the server's tools and saw their answers.
    assert model.requests[0].tool_names == ["Time.get_current_time", "Time.convert_time"]
    assert [m.content for m in results(model.requests[1].messages)] == [now.content, converted.content]


def test_bad_arguments_to_the_time_server_are_error_results(time_tools: MCPToolset) -> None:
    model = ScriptedModel(
        [
            calls(
                ("Time.get_current_time", {}),  # misses a required argument: refused before anything is sent
                ("Time.get_current_time", {"timezone": 42}),  # the wrong type
                ("Time.get_current_time", {"timezone": "Mars/Olympus_Mons"}),  # valid JSON, refused by the server
            ),
            calls(("Time.get_current_time", {"timezone": "Asia/Tokyo"})),
            "Tokyo it is.",
        ]
    )
    conversation = llm.model(model).tools(time_tools).request("Time?").prompt_conversation()
    assert conversation.continuation.prompt() == "Tokyo it is."

    missing, wrong_type, refused, tokyo = results(conversation.messages)
    assert missing.is_error and "'timezone' is a required property" in missing.content
    assert wrong_type.is_error and "timezone: 42 is not of type 'string'" in wrong_type.content
    assert refused.is_error and "Invalid timezone" in refused.content and "Mars/Olympus_Mons" in refused.content
    assert not tokyo.is_error and json.loads(tokyo.content)["timezone"] == "Asia/Tokyo"
    conversation.messages.validate()


def test_a_tool_loop_on_the_git_server_reads_a_repository(servers: Servers, git_repository: Path) -> None:
    git = servers.git(git_repository, name="Git")
    assert {"Git.git_status", "Git.git_log", "Git.git_diff_unstaged"} <= set(git.names())
    repo = str(git_repository)
    model = ScriptedModel(
        [
            calls(("Git.git_log", {"repo_path": repo}), ("Git.git_diff_unstaged", {"repo_path": repo})),
            "One commit; one line added since.",
        ]
    )
    conversation = llm.model(model).tools(git).request("What changed in the repo?").prompt_conversation()
    conversation.continuation.prompt()

    log, diff = results(conversation.messages)
    assert not log.is_error and "Add the notes file" in log.content and "Ada" in log.content
    assert not diff.is_error and "+second line" in diff.content


def test_the_git_server_refusing_a_call_is_an_error_result(
    servers: Servers, git_repository: Path, tmp_path: Path
) -> None:
    git = servers.git(git_repository, name="Git", include=["git_status", "git_log"])
    assert git.names() == ["Git.git_status", "Git.git_log"]
    elsewhere = tmp_path / "not-a-repo"
    elsewhere.mkdir()
    model = ScriptedModel(
        [
            calls(("Git.git_status", {"repo_path": str(elsewhere)}), ("Git.git_log", {"path": "."})),
            calls(("Git.git_status", {"repo_path": str(git_repository)})),
            "Modified: notes.txt",
        ]
    )
    conversation = llm.model(model).tools(git).request("Status?").prompt_conversation()
    conversation.continuation.prompt()

    outside, misnamed, status = results(conversation.messages)
    assert outside.is_error and str(elsewhere) in outside.content
    assert misnamed.is_error and "'repo_path' is a required property" in misnamed.content
    assert not status.is_error and "notes.txt" in status.content
