"""`ScriptedModel` (docs/architecture.md#models): plays back str / AssistantMessage / exception / callable, records
every request."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from threadline import (
    AssistantMessage,
    Model,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolSpec,
    Usage,
    llm,
    user,
)
from threadline.testing import ScriptedModel, ScriptedRequest


async def events(model: ScriptedModel, request: ModelRequest | None = None) -> list[Any]:
    return [event async for event in model.stream(request or ModelRequest(messages=[user("hi")]))]


def test_scripted_model_is_a_model_with_full_capabilities() -> None:
    model = ScriptedModel()
    assert isinstance(model, Model)
    caps = model.capabilities
    assert caps.tools and caps.streaming and caps.structured_output and caps.images
    assert model.name == "scripted"
    assert ScriptedModel(name="fake:1").name == "fake:1"


def test_a_string_is_a_final_answer_streamed_in_chunks() -> None:
    text = "A final answer long enough to be split into chunks."
    out = asyncio.run(events(ScriptedModel([text])))
    deltas, final = out[:-1], out[-1]
    assert len(deltas) > 1 and all(isinstance(d, TextDelta) for d in deltas)
    assert "".join(d.text for d in deltas) == text
    assert isinstance(final, ModelResponse)
    assert (final.content, final.tool_calls, final.stop_reason, final.model) == (text, [], "stop", "scripted")


def test_an_assistant_message_plays_back_its_text_and_tool_calls() -> None:
    message = AssistantMessage(
        content="Checking the weather now.",
        tool_calls=[
            ToolCall(id="c1", name="Notes.add", arguments={"a": 1}),
            ToolCall(id="c2", name="f", raw_arguments="{"),
        ],
        usage=Usage(input_tokens=5, output_tokens=6),
    )
    out = asyncio.run(events(ScriptedModel([message])))
    final = out[-1]
    assert "".join(e.text for e in out[:-1]) == "Checking the weather now."
    assert isinstance(final, ModelResponse)
    assert final.tool_calls == message.tool_calls
    assert final.tool_calls[0] is not message.tool_calls[0]  # playing back never shares mutable parts
    assert final.stop_reason == "tool_calls"
    assert final.usage == Usage(input_tokens=5, output_tokens=6)


def test_an_exception_fails_the_call_after_streaming_its_partial_text() -> None:
    error = ModelError("boom", partial="so far")
    model = ScriptedModel([error, ValueError("plain")])
    seen: list[Any] = []

    async def run() -> None:
        with pytest.raises(ModelError) as info:
            async for event in model.stream(ModelRequest(messages=[user("x")])):
                seen.append(event)
        assert info.value is error
        with pytest.raises(ValueError, match="plain"):
            await events(model)

    asyncio.run(run())
    assert seen == [TextDelta("so far")]


def test_callables_sync_and_async_receive_the_recorded_request() -> None:
    received: list[ScriptedRequest] = []

    def sync_answer(request: ScriptedRequest) -> str:
        received.append(request)
        return f"you said {request.messages[-1].content}"

    async def async_answer(request: ScriptedRequest) -> AssistantMessage:
        await asyncio.sleep(0)
        received.append(request)
        return AssistantMessage(content="async")

    def nested(request: ScriptedRequest) -> Any:
        return lambda inner: "nested " + str(len(inner.messages))

    model = ScriptedModel([sync_answer, async_answer, nested])
    first = asyncio.run(events(model, ModelRequest(messages=[user("ping")])))
    second = asyncio.run(events(model))
    third = asyncio.run(events(model, ModelRequest(messages=[user("a"), user("b")])))
    assert first[-1].content == "you said ping"
    assert second[-1].content == "async"
    assert third[-1].content == "nested 2"
    assert received == model.requests[:2]


def test_callable_may_return_an_exception_to_fail_the_call() -> None:
    model = ScriptedModel([lambda request: ModelError("from callable", type="rate_limit")])
    with pytest.raises(ModelError, match="from callable"):
        asyncio.run(events(model))


def test_every_request_is_recorded_with_messages_tools_and_settings() -> None:
    def get_weather(city: str) -> str:
        """Weather."""
        return city

    model = ScriptedModel(["ok"])
    llm.model(model).agent("Be brief.").tools(get_weather).request("hi").prompt(temperature=0.3, openai_seed=1)
    (request,) = model.requests
    assert isinstance(request.messages[0], SystemMessage)  # the generated prefix, exactly as sent
    assert "MODE" in request.messages[0].content
    assert [m.content for m in request.messages[1:]] == ["Be brief.", "hi"]
    assert request.tools == [
        ToolSpec(
            name="get_weather",
            description="Weather.",
            parameters={
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": False,
            },
        )
    ]
    assert request.tool_names == ["get_weather"]
    assert isinstance(request.settings, ModelSettings)
    assert request.settings.temperature == 0.3 and request.settings.extras == {"openai_seed": 1}


def test_recorded_messages_are_a_snapshot() -> None:
    model = ScriptedModel(["a", "b"])
    conversation = llm.model(model).request("1").prompt_conversation()
    conversation.continuation.prompt()
    conversation.continuation.request("2").prompt()
    assert len(model.requests[0].messages) == 2  # prefix + "1", not changed by the later turn
    assert len(model.requests[1].messages) == 4


def test_an_empty_queue_fails_with_a_clear_model_error() -> None:
    model = ScriptedModel(["only one"])
    asyncio.run(events(model))
    with pytest.raises(ModelError, match=r"no scripted response left for request 2 \(it was given 1\)"):
        asyncio.run(events(model))
    assert len(model.requests) == 2


def test_add_and_remaining() -> None:
    model = ScriptedModel()
    assert model.remaining == 0
    assert model.add("a", "b") is model
    assert model.remaining == 2
    asyncio.run(events(model))
    assert model.remaining == 1


def test_an_unplayable_item_is_a_clear_error() -> None:
    model = ScriptedModel([42])
    with pytest.raises(TypeError, match="cannot play int"):
        asyncio.run(events(model))
    model = ScriptedModel([42])
    with pytest.raises(ModelError, match="cannot play int"):
        llm.model(model).request("x").prompt()


def test_usage_given_to_the_model_is_reported_with_each_answer() -> None:
    model = ScriptedModel(["a"], usage=Usage(input_tokens=1, output_tokens=2))
    llm.model(model).request("x").prompt()
    assert model.requests and model.remaining == 0
    out = asyncio.run(events(ScriptedModel(["b"], usage=Usage(input_tokens=1, output_tokens=2))))
    assert out[-1].usage == Usage(input_tokens=1, output_tokens=2)


def test_empty_string_answer_streams_nothing_and_answers_empty() -> None:
    out = asyncio.run(events(ScriptedModel([""])))
    assert len(out) == 1 and out[0].content == ""
