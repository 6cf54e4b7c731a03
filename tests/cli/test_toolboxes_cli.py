"""``threadline prompt -T pages``, ``-T mcp:COMMAND`` and ``-T mcp+http://…`` as a user runs them (subprocesses
talking to the fake OpenAI server on 127.0.0.1), and ``threadline logs show`` listing the pages a conversation
made."""

# The store fixtures are imported from tests.store._backends, so test parameters share their names.
# ruff: noqa: F811
from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp_toolsets.conftest import DEMO_SERVER, HttpServer, http_server  # noqa: F401 - fixtures
from tests.providers.servers import Answer, FakeOpenAI, ToolUse
from tests.store._backends import run_cli, store_url  # noqa: F401 - fixtures
from threadline.store import open_store


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    try:
        yield server  # type: ignore[misc]
    finally:
        server.stop()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """One store for the MCP commands (the store backends are covered by the pages tests)."""
    return f"sqlite:///{tmp_path / 'store.db'}"


def env_for(server: FakeOpenAI, store_url: str) -> dict[str, str]:
    return {"OPENAI_BASE_URL": f"{server.root}/v1", "OPENAI_API_KEY": "sk-test-cli", "THREADLINE_STORE": store_url}


def page_call(title: str, html: str, js: str = "") -> ToolUse:
    return ToolUse("Pages_generate_ui", json.dumps({"title": title, "html": html, "js": js}))


def test_prompt_with_pages_saves_pages_and_logs_show_lists_them(openai_server: FakeOpenAI, store_url: str) -> None:
    openai_server.add(
        Answer(tool_calls=(page_call("Tabs [draft]", "<button>One</button>", "function showTab() {}"),)),
        Answer(tool_calls=(page_call("Tabs", "<button onclick='showTab()'>One</button>", "function showTab() {}"),)),
        Answer("Your page is ready."),
    )
    done = run_cli(
        "prompt", "-m", "openai:gpt-4o-mini", "-T", "pages", "A page with tabs", env=env_for(openai_server, store_url)
    )
    assert done.returncode == 0, done.stderr
    assert "Your page is ready." in done.stdout

    # The model was offered Pages and told to review the code it gets back.
    first = openai_server.bodies[0]
    assert [tool["function"]["name"] for tool in first["tools"]] == ["Pages_generate_ui"]
    assert "generated_code" in first["messages"][0]["content"]
    second_result = json.loads(openai_server.bodies[1]["messages"][-1]["content"])
    assert second_result["generated_code"]["js"] == "function showTab() {}"

    with open_store(store_url) as store:
        (info,) = store.list_conversations()
        pages = store.list_pages(info.id)
    assert [page.title for page in pages] == ["Tabs [draft]", "Tabs"]

    shown = run_cli(
        "logs", "show", info.id, env={"THREADLINE_STORE": store_url, "THREADLINE_PAGES_URL": "http://viewer:9"}
    )
    assert shown.returncode == 0, shown.stderr
    assert "PAGES (2)" in shown.stdout
    for page in pages:
        assert f"http://viewer:9/p/{page.id}" in shown.stdout
    assert "Tabs [draft]" in shown.stdout  # a title is text, never rich markup


def test_logs_show_says_nothing_about_pages_when_there_are_none(openai_server: FakeOpenAI, store_url: str) -> None:
    openai_server.add(Answer("Hello."))
    done = run_cli("prompt", "-m", "openai:gpt-4o-mini", "Hi", env=env_for(openai_server, store_url))
    assert done.returncode == 0, done.stderr
    with open_store(store_url) as store:
        (info,) = store.list_conversations()
    shown = run_cli("logs", "show", info.id, env={"THREADLINE_STORE": store_url})
    assert shown.returncode == 0 and "PAGES" not in shown.stdout


def test_pages_cannot_be_used_without_a_store(openai_server: FakeOpenAI, sqlite_url: str) -> None:
    done = run_cli(
        "prompt", "--no-log", "-m", "openai:gpt-4o-mini", "-T", "pages", "x", env=env_for(openai_server, sqlite_url)
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == "Error: -T pages saves pages in the store; it cannot be used with --no-log"
    assert openai_server.count == 0


def test_prompt_with_a_stdio_mcp_server(openai_server: FakeOpenAI, sqlite_url: str) -> None:
    openai_server.add(Answer(tool_calls=(ToolUse("Demo_add", '{"a": 40, "b": 2}'),)), Answer("It is 42."))
    spec = f"mcp:{sys.executable} {DEMO_SERVER}"
    done = run_cli(
        "prompt", "-m", "openai:gpt-4o-mini", "-T", spec, "What is 40 + 2?", env=env_for(openai_server, sqlite_url)
    )
    assert done.returncode == 0, done.stderr
    assert "It is 42." in done.stdout
    assert "Demo.add" in done.stderr  # the tool call is shown by its real name
    assert openai_server.bodies[1]["messages"][-1]["content"] == "42"
    assert "Demo tools: add numbers" in openai_server.bodies[0]["messages"][0]["content"]
    with open_store(sqlite_url) as store:
        (info,) = store.list_conversations()
        log = store.load(info.id)
    assert log[1].tool_calls[0].name == "Demo.add"  # type: ignore[union-attr]


def test_prompt_with_a_streamable_http_mcp_server(
    openai_server: FakeOpenAI, sqlite_url: str, http_server: HttpServer
) -> None:
    openai_server.add(Answer(tool_calls=(ToolUse("Demo_pid", "{}"),)), Answer("Done."))
    spec = f"mcp+{http_server.url}"
    done = run_cli("prompt", "-m", "openai:gpt-4o-mini", "-T", spec, "pid?", env=env_for(openai_server, sqlite_url))
    assert done.returncode == 0, done.stderr
    assert openai_server.bodies[1]["messages"][-1]["content"] == str(http_server.process.pid)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("mcp:", "give the server's command"),
        ("mcp:/no/such/server --flag", "could not be started: no such program: /no/such/server"),
        ("mcp:'unclosed", "No closing quotation"),
        ("mcp+http://127.0.0.1:1/mcp", "MCP server 'http://127.0.0.1:1/mcp' could not be reached"),
    ],
)
def test_a_bad_mcp_spec_is_one_line_before_any_request(
    openai_server: FakeOpenAI, sqlite_url: str, spec: str, fragment: str
) -> None:
    done = run_cli("prompt", "-m", "openai:gpt-4o-mini", "-T", spec, "x", env=env_for(openai_server, sqlite_url))
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and fragment in lines[0], done.stderr
    assert openai_server.count == 0
