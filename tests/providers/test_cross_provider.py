"""A tool-using conversation begun on OpenAI, continued on Anthropic and back (and the other way round): the log
keeps every original id and real tool name, and each provider is sent a valid, lossless translation."""

from __future__ import annotations

import re

from threadline import AssistantMessage, Conversation, MessageList, ToolMessage, UserMessage, llm
from threadline.models.anthropic import AnthropicModel
from threadline.models.openai import OpenAIModel

from .servers import Answer, FakeAnthropic, FakeOpenAI, ToolUse

ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
# An id in a shape some OpenAI-compatible servers use; valid for OpenAI, not for Anthropic.
ODD_ID = "fc.call:0/get_weather"


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C in {city}"


async def run(conversation: Conversation) -> list[object]:
    return [message async for message in conversation]


async def test_openai_then_anthropic_then_openai(
    openai_server: FakeOpenAI,
    openai_model: OpenAIModel,
    anthropic_server: FakeAnthropic,
    anthropic_model: AnthropicModel,
) -> None:
    openai_server.add(
        Answer(tool_calls=(ToolUse("get_weather", '{"city": "Paris"}', id=ODD_ID),)),
        Answer("Paris: 22 C."),
    )
    conversation = llm.model(openai_model).tools(get_weather).request("Weather in Paris?").prompt_conversation()
    await run(conversation)
    assert conversation.messages[1].tool_calls[0].id == ODD_ID  # type: ignore[union-attr]

    # -- continued on Anthropic ------------------------------------------------------------------------------
    anthropic_server.add(
        Answer(tool_calls=(ToolUse("get_weather", '{"city": "Rome"}', id="toolu_01Rome"),)),
        Answer("Rome: 22 C."),
    )
    await run(conversation.continuation.model(anthropic_model).request("And Rome?").prompt_conversation())
    first = anthropic_server.bodies[0]
    system, messages = first["system"], first["messages"]
    assert "MODE" in system  # the per-request prefix is the top-level system
    assert [turn["role"] for turn in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[0]["content"] == [{"type": "text", "text": "Weather in Paris?"}]
    (tool_use,) = messages[1]["content"]
    assert tool_use["type"] == "tool_use"
    assert tool_use["name"] == "get_weather"
    assert tool_use["input"] == {"city": "Paris"}
    assert ANTHROPIC_ID.match(tool_use["id"]) and tool_use["id"] != ODD_ID
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": tool_use["id"], "content": "22 C in Paris"}
    ]
    assert messages[3]["content"] == [{"type": "text", "text": "Paris: 22 C."}]
    assert messages[4]["content"] == [{"type": "text", "text": "And Rome?"}]
    assert [tool["name"] for tool in first["tools"]] == ["get_weather"]

    # -- and back on OpenAI ------------------------------------------------------------------------------------
    openai_server.add(Answer("Both are at 22 C."))
    await run(conversation.continuation.model(openai_model).request("Compare them.").prompt_conversation())
    last = openai_server.bodies[-1]
    sent = last["messages"]
    assert sent[0]["role"] == "system"
    assert [m["role"] for m in sent[1:]] == [
        "user", "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant", "user",
    ]  # fmt: skip
    assert sent[2]["tool_calls"] == [
        {"id": ODD_ID, "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
    ]  # the original id, verbatim
    assert sent[3] == {"role": "tool", "tool_call_id": ODD_ID, "content": "22 C in Paris"}
    assert sent[6]["tool_calls"][0]["id"] == "toolu_01Rome"  # Anthropic's id, kept as the log has it
    assert sent[7] == {"role": "tool", "tool_call_id": "toolu_01Rome", "content": "22 C in Rome"}
    assert sent[9] == {"role": "user", "content": "Compare them."}

    log = conversation.messages
    log.validate()
    calls = [call for m in log if isinstance(m, AssistantMessage) for call in m.tool_calls]
    assert [call.id for call in calls] == [ODD_ID, "toolu_01Rome"]
    results = [m.tool_call_id for m in log if isinstance(m, ToolMessage)]
    assert results == [ODD_ID, "toolu_01Rome"]
    assert [m.model for m in log if isinstance(m, AssistantMessage)] == [
        "openai:gpt-4o-mini", "openai:gpt-4o-mini", "anthropic:claude-haiku-4-5", "anthropic:claude-haiku-4-5",
        "openai:gpt-4o-mini",
    ]  # fmt: skip
    # The saved log round-trips and continues the same way.
    assert MessageList.from_json(log.to_json()) == log


async def test_anthropic_then_openai_with_a_saved_and_reloaded_log(
    openai_server: FakeOpenAI,
    openai_model: OpenAIModel,
    anthropic_server: FakeAnthropic,
    anthropic_model: AnthropicModel,
) -> None:
    anthropic_server.add(
        Answer("Let me look.", tool_calls=(ToolUse("get_weather", '{"city": "Oslo"}', id="toolu_01Oslo"),)),
        Answer("Oslo: 22 C."),
    )
    conversation = llm.model(anthropic_model).tools(get_weather).request("Weather in Oslo?").prompt_conversation()
    await run(conversation)
    saved = conversation.messages.to_json()

    restored = Conversation(messages=MessageList.from_json(saved))
    openai_server.add(Answer("Still 22 C."))
    text = await restored.continuation.model(openai_model).tools(get_weather).request("Still?").prompt_async()
    assert text == "Still 22 C."
    sent = openai_server.bodies[0]["messages"]
    assert sent[1] == {"role": "user", "content": "Weather in Oslo?"}
    assert sent[2] == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "toolu_01Oslo",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
            }
        ],
    }
    assert sent[3] == {"role": "tool", "tool_call_id": "toolu_01Oslo", "content": "22 C in Oslo"}
    assert sent[4] == {"role": "assistant", "content": "Oslo: 22 C."}
    assert sent[5] == {"role": "user", "content": "Still?"}
    restored.messages.validate()
    assert [type(m) for m in restored.messages][-2:] == [UserMessage, AssistantMessage]
