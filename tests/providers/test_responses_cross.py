"""``openai-responses:`` among the other providers: a log begun on ``openai:`` (with a compatible server's plain
thinking) and ``anthropic:`` (with signed thinking) continues on the Responses API and back, each provider sent only
the reasoning of its own family; and the name resolves like every other provider's, lazily."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from threadline import (
    AssistantMessage,
    Conversation,
    MessageList,
    Reasoning,
    ToolCall,
    ToolMessage,
    UserMessage,
    get_model,
    llm,
)
from threadline.models.anthropic import AnthropicModel
from threadline.models.openai import OpenAIModel
from threadline.models.openai_responses import OpenAIResponsesModel

from .servers import Answer, FakeAnthropic, FakeOpenAI, FakeResponses, Thought, ToolUse

SIGNED = Reasoning(text="Claude weighed the cities.", signature="EqQBCkgIARABGAIiQL", provider="anthropic")
PLAIN = Reasoning(text="A local model's plain thinking.", provider="openai")


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C in {city}"


def mixed_log() -> MessageList:
    """A log whose earlier turns came from Anthropic (signed thinking) and an OpenAI-compatible server (plain)."""
    call = ToolCall(id="toolu_01Oslo", name="get_weather", arguments={"city": "Oslo"})
    return MessageList(
        [
            UserMessage(content="Weather in Oslo?"),
            AssistantMessage(tool_calls=[call], reasoning=[SIGNED], model="anthropic:claude-sonnet-4-5"),
            ToolMessage(tool_call_id="toolu_01Oslo", tool_name="get_weather", content="22 C in Oslo"),
            AssistantMessage(content="Oslo: 22 C.", reasoning=[PLAIN], model="openai:qwen3"),
        ]
    )


async def run(conversation: Conversation) -> None:
    async for _ in conversation:
        pass
    conversation.messages.validate()


async def test_a_log_moves_between_providers_and_each_gets_only_its_own_reasoning(
    responses_server: FakeResponses,
    responses_model: OpenAIResponsesModel,
    openai_server: FakeOpenAI,
    openai_model: OpenAIModel,
    anthropic_server: FakeAnthropic,
    anthropic_model: AnthropicModel,
) -> None:
    conversation = Conversation(messages=mixed_log())

    # -- onto the Responses API: the other families' thinking stays in the log only ---------------------------
    responses_server.add(
        Thought(summaries=("Rome next.",), tool_calls=(ToolUse("get_weather", '{"city": "Rome"}'),)),
        Thought("Rome: 22 C."),
    )
    builder = conversation.continuation.model(responses_model).tools(get_weather).reasoning(effort="low")
    await run(builder.request("And Rome?").prompt_conversation())
    first = responses_server.bodies[0]
    assert [item["type"] for item in first["input"]] == [
        "message", "function_call", "function_call_output", "message", "message",
    ]  # fmt: skip
    assert first["input"][1] == {
        "type": "function_call",
        "call_id": "toolu_01Oslo",
        "name": "get_weather",
        "arguments": '{"city":"Oslo"}',
    }
    assert "Claude weighed" not in json.dumps(first) and "plain thinking" not in json.dumps(first)
    assert [item["type"] for item in responses_server.bodies[1]["input"]][-3:] == [
        "reasoning", "function_call", "function_call_output",
    ]  # fmt: skip
    rome = conversation.messages[5]
    assert isinstance(rome, AssistantMessage)
    assert rome.reasoning[0].provider == f"openai-responses@127.0.0.1:{responses_server.port}"
    encrypted = rome.reasoning[0].redacted
    assert encrypted is not None

    # -- to Anthropic and to Chat Completions: the encrypted reasoning is never sent there --------------------------
    anthropic_server.add(Answer("Both 22 C."))
    plain = conversation.continuation.reasoning(enabled=False)
    await run(plain.model(anthropic_model).request("Compare.").prompt_conversation())
    openai_server.add(Answer("Still 22 C."))
    await run(
        conversation.continuation.reasoning(enabled=False).model(openai_model).request("Still?").prompt_conversation()
    )
    for body in (anthropic_server.bodies[0], openai_server.bodies[0]):
        sent = json.dumps(body)
        assert encrypted not in sent and "Rome next." not in sent and "rs_" not in sent

    # -- and back: the Responses API gets its own reasoning again, and the server accepts the loop ----------------
    responses_server.add(Thought(tool_calls=(ToolUse("get_weather", '{"city": "Nice"}'),)), Thought("Nice: 22 C."))
    await run(
        conversation.continuation.model(responses_model).tools(get_weather).request("Nice?").prompt_conversation()
    )
    last = responses_server.bodies[-1]
    replayed = [item for item in last["input"] if item["type"] == "reasoning"]
    assert replayed[0]["encrypted_content"] == encrypted
    # Rome's call, Rome's answer and Nice's call: all issued by this server, none from the other families.
    assert [item["id"] for item in replayed] == responses_server.reasoning_ids[:3]
    assert [m.model for m in conversation.messages if isinstance(m, AssistantMessage)][-2:] == [
        "openai-responses:o4-mini",
        "openai-responses:o4-mini",
    ]
    assert MessageList.from_json(conversation.messages.to_json()) == conversation.messages


def test_the_name_resolves_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-responses-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    model = get_model("openai-responses:o4-mini")
    assert isinstance(model, OpenAIResponsesModel)
    assert model.name == "openai-responses:o4-mini" and model.base_url == "http://127.0.0.1:9/v1"
    assert model.capabilities.reasoning and get_model("openai-responses:o4-mini") is model
    assert isinstance(get_model("openai-responses"), OpenAIResponsesModel)  # the provider's default model
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:10/v1")
    assert get_model("openai-responses:o4-mini").base_url == "http://127.0.0.1:10/v1"  # a new configuration
    resolved = llm.model("openai-responses:gpt-5").request("Hi").prompt_conversation().host.resolve_model()
    assert isinstance(resolved, OpenAIResponsesModel) and resolved.name == "openai-responses:gpt-5"
    assert OpenAIResponsesModel("o3", reasoning_summary=None).profile.reasoning_summary is None


def test_threadline_models_lists_the_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    from threadline.cli import cli

    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-DO-NOT-PRINT-123456")
    result = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["models", "--json"], catch_exceptions=False)
    rows = {row["provider"]: row for row in json.loads(result.output)["providers"]}
    assert rows["openai-responses"]["model"] == "openai-responses:o4-mini"
    assert rows["openai-responses"]["key"] == "set" and rows["openai-responses"]["ready"] is True
    assert "DO-NOT-PRINT" not in result.output


def test_the_adapter_is_imported_only_when_the_name_is_resolved() -> None:
    code = (
        "import sys, threadline\n"
        "assert 'threadline.models.openai_responses' not in sys.modules and 'httpx' not in sys.modules\n"
        "threadline.get_model('openai-responses:o4-mini')\n"
        "print('threadline.models.openai_responses' in sys.modules)\n"
        "print('threadline.models.openai._chat_request' in sys.modules)\n"
    )
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-import-0123456789"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert result.stdout.split() == ["True", "False"]  # the Chat Completions translation is not loaded with it
