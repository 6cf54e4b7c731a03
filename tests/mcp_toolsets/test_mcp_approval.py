"""Approval for the tools of a real MCP server (``mcp-server-git`` over stdio): ``Toolset.from_mcp(approval=...)``
makes a call of the named tool wait, nothing reaches the server until a person approves, and the next turn runs it
on the server once; an ``approval`` naming a tool the server does not have is refused, clearly, when the tools are
listed."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from threadline import AssistantMessage, Conversation, ConversationConfig, ToolCall, ToolMessage, UserError
from threadline.store import open_store
from threadline.testing import ScriptedModel

from .conftest import Servers

AUTHOR = {
    "GIT_AUTHOR_NAME": "Ada",
    "GIT_AUTHOR_EMAIL": "ada@example.org",
    "GIT_COMMITTER_NAME": "Ada",
    "GIT_COMMITTER_EMAIL": "ada@example.org",
}


def commits(repository: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(repository), "log", "--format=%s"], check=True, capture_output=True, text=True
    )
    return out.stdout.splitlines()


def staged(repository: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(repository), "diff", "--cached", "--name-only"], check=True, capture_output=True, text=True
    )
    return out.stdout.splitlines()


def calls(*pairs: tuple[str, str, dict[str, Any]]) -> AssistantMessage:
    return AssistantMessage(tool_calls=[ToolCall(id=i, name=n, arguments=a) for i, n, a in pairs])


def test_an_mcp_tool_that_needs_approval_waits_then_runs_once_on_the_server(
    servers: Servers, git_repository: Path, tmp_path: Path
) -> None:
    git = servers.git(git_repository, name="Git", env=AUTHOR, approval={"git_commit": True})
    repo = str(git_repository)
    model = ScriptedModel(
        [
            calls(
                ("c1", "Git.git_add", {"repo_path": repo, "files": ["notes.txt"]}),
                ("c2", "Git.git_commit", {"repo_path": repo, "message": "Add the second line"}),
            ),
            "Committed.",
        ]
    )
    store = open_store(str(tmp_path / "log.db"))
    chat = Conversation(config=ConversationConfig(model=model, tools=[git]), store=store)
    chat.continuation.request("Commit the notes").prompt()

    # The add ran on the server; the commit waits, and the server has not seen it.
    assert [(item.call.id, item.tool) for item in chat.awaiting] == [("c2", "Git.git_commit")]
    assert staged(git_repository) == ["notes.txt"]
    assert commits(git_repository) == ["Add the notes file"]

    chat.approve("c2", by="alice")
    assert chat.resume().text == "Committed."
    assert commits(git_repository) == ["Add the second line", "Add the notes file"]
    assert staged(git_repository) == []
    results = [m for m in chat.messages if isinstance(m, ToolMessage) and m.tool_call_id == "c2"]
    assert len(results) == 1 and not results[0].is_error
    store.load(chat.id).validate()
    store.close()


def test_an_approval_naming_a_tool_the_server_lacks_is_refused_when_tools_are_listed(
    servers: Servers, git_repository: Path
) -> None:
    git = servers.git(git_repository, name="Git", approval={"git_push": True})
    with pytest.raises(UserError, match="git_push") as refused:
        git.names()
    assert "git_commit" in str(refused.value)  # it names the tools there are


def test_a_turn_with_such_an_approval_fails_before_the_model_is_asked(
    servers: Servers, git_repository: Path, tmp_path: Path
) -> None:
    git = servers.git(git_repository, name="Git", approval={"git_push": True})
    model = ScriptedModel(["never"])
    store = open_store(str(tmp_path / "log.db"))
    chat = Conversation(config=ConversationConfig(model=model, tools=[git]), store=store)
    with pytest.raises(UserError, match="approval names 'git_push'"):
        chat.continuation.request("Push").prompt()
    assert model.requests == []
    store.close()
