"""Adaptive thinking end to end: the public API against the signing fake Anthropic server on 127.0.0.1, which
applies each model's documented rules (`servers.anthropic_thinking.MODELS`: adaptive only, thinking on by default,
``display: "omitted"`` by default, no forced tool, no temperature, no prefill) and answers what the API refuses with
its real 400 texts. Tool loops on an adaptive-only model, streamed and not; a continuation whose turn has no
thinking block; a model that thinks without being asked; the refusals before any request; and the budget families,
which still send a budget."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from threadline import (
    AssistantMessage,
    CapabilityError,
    Conversation,
    Reasoning,
    ToolCall,
    ToolMessage,
    UserMessage,
    llm,
)
from threadline.conversation.config import ConversationConfig
from threadline.models.anthropic import AnthropicModel
from threadline.models.base import ReasoningSettings

from .conftest import SECRET, make_anthropic
from .servers import ToolUse
from .servers.anthropic_thinking import FakeAnthropicThinking, Think, Thought, rules_for, sign

PARIS_THOUGHT = "The user wants the weather in Paris; get_weather does that."
ROME_THOUGHT = "Paris is known; Rome next."
ADAPTIVE = {"type": "adaptive", "display": "summarized"}


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C and sunny in {city}"


@pytest.fixture
def server() -> Iterator[FakeAnthropicThinking]:
    with FakeAnthropicThinking() as fake:
        yield fake  # type: ignore[misc]


@pytest.fixture
async def fable(server: FakeAnthropicThinking) -> AsyncIterator[AnthropicModel]:
    # Adaptive only: "enabled" and "disabled" are refused, thinking is always on, its text omitted by default.
    model = make_anthropic(server, "claude-fable-5")  # type: ignore[arg-type]
    yield model
    await model.aclose()


async def run(conversation: Conversation, **overrides: Any) -> list[Any]:
    return [message async for message in conversation.run(**overrides)]


def config(model: Any, reasoning: ReasoningSettings | None = None, **kwargs: Any) -> ConversationConfig:
    return ConversationConfig(model=model, tools=[get_weather], reasoning=reasoning, **kwargs)


async def post(server: FakeAnthropicThinking, body: dict[str, Any]) -> dict[str, Any]:
    """Send a body as it is, to read what the fake (the API) answers to it."""
    headers = {"x-api-key": SECRET, "anthropic-version": "2023-06-01"}
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{server.base_url}/v1/messages", json=body, headers=headers)
    return response.json()  # type: ignore[no-any-return]


# -- a tool loop ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_a_tool_loop_with_adaptive_thinking_on_an_adaptive_only_model(
    server: FakeAnthropicThinking, fable: AnthropicModel, stream: bool
) -> None:
    server.add(
        Thought(
            blocks=(
                Think(PARIS_THOUGHT),
                "Checking Paris.",
                ToolUse("get_weather", '{"city": "Paris"}'),
                Think(ROME_THOUGHT),  # interleaved: automatic with adaptive thinking
                ToolUse("get_weather", '{"city": "Rome"}'),
            )
        ),
        Thought(blocks=("Both are at 22 C.",), thinking_tokens=35),
    )
    seen: list[str] = []
    conversation = llm.model(fable).tools(get_weather).reasoning(effort="high").request("Paris and Rome?")
    conv = conversation.prompt_conversation(stream=stream)
    call, *_, answer = await run(conv, on_reasoning=seen.append)
    assert isinstance(call, AssistantMessage)
    assert [(piece.text, piece.signature, piece.position) for piece in call.reasoning] == [
        (PARIS_THOUGHT, sign(PARIS_THOUGHT), None),
        (ROME_THOUGHT, sign(ROME_THOUGHT), 3),
    ]
    assert "".join(seen) == PARIS_THOUGHT + "\n\n" + ROME_THOUGHT  # the text came back: "summarized" was asked
    assert answer.content == "Both are at 22 C."
    assert answer.usage is not None and answer.usage.reasoning_tokens == 35
    assert server.count == 2  # the continuation passed the fake's checks: no 400
    first, second = server.bodies
    for body in (first, second):
        assert body["model"] == "claude-fable-5"
        assert body["thinking"] == ADAPTIVE and body["output_config"] == {"effort": "high"}
        assert body["max_tokens"] == 24_576 + 8_192 and "temperature" not in body
    sent = second["messages"][1]["content"]
    assert [block["type"] for block in sent] == ["thinking", "text", "tool_use", "thinking", "tool_use"]
    assert sent[3] == {"type": "thinking", "thinking": ROME_THOUGHT, "signature": sign(ROME_THOUGHT)}
    conv.messages.validate()


async def test_without_display_summarized_the_thinking_text_would_not_come_back(server: FakeAnthropicThinking) -> None:
    # Why the adapter asks for "summarized": on this model "omitted" is the default, and the block comes back empty.
    server.add(Thought(blocks=(Think(PARIS_THOUGHT), "22 C.")))
    answer = await post(
        server,
        {
            "model": "claude-fable-5",
            "max_tokens": 1_000,
            "thinking": {"type": "adaptive"},
            "messages": [{"role": "user", "content": "Weather?"}],
        },
    )
    assert answer["content"][0]["type"] == "thinking" and answer["content"][0]["thinking"] == ""
    assert answer["content"][0]["signature"]


async def test_a_budget_on_an_adaptive_only_model_is_what_the_api_refuses(server: FakeAnthropicThinking) -> None:
    # What .reasoning() sent to every Claude before: the fake answers with the API's own 400.
    refused = await post(
        server,
        {
            "model": "claude-opus-4-7",
            "max_tokens": 16_000,
            "thinking": {"type": "enabled", "budget_tokens": 8_192},
            "messages": [{"role": "user", "content": "q"}],
        },
    )
    assert refused["error"]["message"] == (
        '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and '
        '"output_config.effort" to control thinking behavior.'
    )
    disabled = await post(
        server,
        {
            "model": "claude-fable-5",
            "max_tokens": 100,
            "thinking": {"type": "disabled"},
            "messages": [{"role": "user", "content": "q"}],
        },
    )
    assert disabled["error"]["message"].startswith('"thinking.type.disabled" is not supported for this model.')
    assert server.count == 2


async def test_budget_tokens_map_to_an_effort_on_an_adaptive_model(server: FakeAnthropicThinking) -> None:
    server.add(Thought(blocks=("Hi.",)))  # adaptive thinking may skip thinking on a simple request
    model = make_anthropic(server, "claude-opus-4-7")  # type: ignore[arg-type]
    try:
        text = await llm.model(model).reasoning(budget_tokens=4_000).request("Hi").prompt_async()
    finally:
        await model.aclose()
    assert text == "Hi."
    (body,) = server.bodies
    assert body["thinking"] == ADAPTIVE and body["output_config"] == {"effort": "medium"}


# -- continuations ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_a_turn_where_adaptive_thinking_skipped_thinking_continues_with_thinking_on(
    server: FakeAnthropicThinking, stream: bool
) -> None:
    # The first answer has no thinking block: legitimate in adaptive mode, where "no assistant turn needs to start
    # with one". Budget mode would have to drop thinking for the next request; adaptive mode keeps it.
    server.add(
        Thought(blocks=(ToolUse("get_weather", '{"city": "Paris"}'),)),
        Thought(blocks=(Think("The tool answered."), "22 C in Paris.")),
    )
    model = make_anthropic(server, "claude-opus-4-7")  # type: ignore[arg-type]
    try:
        conv = Conversation(config=config(model, ReasoningSettings(effort="low"), stream=stream))
        conv.add(UserMessage(content="Weather in Paris?"))
        call, _, answer = await run(conv)
    finally:
        await model.aclose()
    assert call.reasoning == [] and answer.reasoning[0].text == "The tool answered."
    second = server.bodies[1]
    assert second["thinking"] == ADAPTIVE and second["output_config"] == {"effort": "low"}
    assert [block["type"] for block in second["messages"][1]["content"]] == ["tool_use"]


async def test_a_log_without_thinking_continues_on_an_adaptive_model_that_cannot_turn_thinking_off(
    server: FakeAnthropicThinking, fable: AnthropicModel
) -> None:
    # A loop stopped mid-way on another model (no thinking block in the call), continued on Claude Fable 5, which
    # refuses "disabled": the request keeps adaptive thinking, as the API allows.
    question = UserMessage(content="Weather in Paris?")
    call = AssistantMessage(
        content=None,
        tool_calls=[ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})],
        reasoning=[Reasoning(text="an o3 summary", signature="enc", provider="openai-responses")],
    )
    result = ToolMessage(tool_call_id="call_1", tool_name="get_weather", content="22 C and sunny in Paris")
    server.add(Thought(blocks=(Think("The result is in."), "It is 22 C in Paris.")))
    conv = Conversation(messages=[question, call, result], config=config(fable, ReasoningSettings(effort="medium")))
    (answer,) = await run(conv)
    assert answer.content == "It is 22 C in Paris." and answer.reasoning[0].text == "The result is in."
    (body,) = server.bodies
    assert body["thinking"] == ADAPTIVE and body["output_config"] == {"effort": "medium"}
    assert [block["type"] for block in body["messages"][1]["content"]] == ["tool_use"]  # o3's thinking stays home
    conv.messages.validate()


async def test_a_model_that_thinks_unasked_gets_its_omitted_thinking_back(server: FakeAnthropicThinking) -> None:
    # Claude Sonnet 5 thinks by default, with its text omitted: no .reasoning(), yet the answer holds signed blocks
    # with an empty text. They are logged and go back with the tool result, as the API requires.
    server.add(
        Thought(blocks=(Think("private reasoning"), ToolUse("get_weather", '{"city": "Paris"}'))),
        Thought(blocks=(Think("done"), "22 C.")),
    )
    model = make_anthropic(server, "claude-sonnet-5")  # type: ignore[arg-type]
    try:
        conv = Conversation(config=config(model, temperature=0.3))
        conv.add(UserMessage(content="Weather in Paris?"))
        call, _, answer = await run(conv)
    finally:
        await model.aclose()
    assert [(piece.text, bool(piece.signature)) for piece in call.reasoning] == [("", True)]
    assert answer.content == "22 C." and server.count == 2
    first, second = server.bodies
    assert "thinking" not in first and "temperature" not in first  # "`temperature` is deprecated for this model."
    assert second["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "",
        "signature": call.reasoning[0].signature,
    }
    conv.messages.validate()


# -- refused before any request -----------------------------------------------------------------------------------


async def test_a_forced_tool_and_structured_output_go_with_adaptive_thinking(server: FakeAnthropicThinking) -> None:
    class City(BaseModel):
        name: str

    # "Adaptive thinking ... supports forced tool use" (Claude then skips thinking).
    server.add(
        Thought(blocks=(ToolUse("get_weather", '{"city": "Paris"}'),)),
        Thought(blocks=("22 C.",)),
        Thought(blocks=('{"name": "Paris"}',)),
    )
    model = make_anthropic(server, "claude-opus-4-7")  # type: ignore[arg-type]
    try:
        thinking = llm.model(model).tools(get_weather).reasoning(effort="low")
        await thinking.tool_choice("required").request("Weather?").prompt_async()
        city = await llm.model(model).reasoning(effort="low").request("Capital of France?").prompt_for_type_async(City)
    finally:
        await model.aclose()
    assert city == City(name="Paris")
    assert server.bodies[0]["tool_choice"] == {"type": "any"} and server.bodies[0]["thinking"] == ADAPTIVE
    # Structured output is Claude's JSON outputs, beside the effort in output_config: no forced tool.
    assert "tools" not in server.bodies[2] and server.bodies[2]["thinking"] == ADAPTIVE
    schema = {"type": "object", "properties": {"name": {"type": "string", "title": "Name"}}, "required": ["name"]}
    output_format = {"type": "json_schema", "schema": {**schema, "title": "City", "additionalProperties": False}}
    assert server.bodies[2]["output_config"] == {"effort": "low", "format": output_format}


@pytest.mark.parametrize("reasoning", [True, False])
async def test_a_forced_tool_is_refused_before_any_request_where_the_api_always_refuses_it(
    server: FakeAnthropicThinking, reasoning: bool
) -> None:
    class City(BaseModel):
        name: str

    model = make_anthropic(server, "claude-opus-5-5")  # type: ignore[arg-type]
    try:
        builder = llm.model(model).tools(get_weather)
        if reasoning:
            builder = builder.reasoning(effort="low")
        with pytest.raises(CapabilityError, match='tool_choice: type "tool" and "any" are not supported'):
            await builder.tool_choice("get_weather").request("Weather?").prompt_async()
        # A schema JSON outputs cannot express (free keys) would need the forced final-result tool.
        with pytest.raises(CapabilityError, match="structured output through the final-result tool"):
            await llm.model(model).request("Population by city?").prompt_for_type_async(dict[str, int])
    finally:
        await model.aclose()
    assert server.count == 0
    # What the API answers to it, which the check spares the caller:
    refused = await post(
        server,
        {
            "model": "claude-opus-5-5",
            "max_tokens": 100,
            "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any"},
            "messages": [{"role": "user", "content": "q"}],
        },
    )
    assert refused["error"]["message"] == 'tool_choice: type "tool" and "any" are not supported for this model.'


async def test_a_prefill_is_refused_before_any_request_on_an_adaptive_model(
    server: FakeAnthropicThinking, fable: AnthropicModel
) -> None:
    conv = Conversation(
        messages=[UserMessage(content="Write a haiku."), AssistantMessage(content="Autumn")],
        config=config(fable, ReasoningSettings(effort="low")),
    )
    with pytest.raises(CapabilityError, match="does not support assistant message prefill"):
        await run(conv)
    assert server.count == 0
    refused = await post(
        server,
        {
            "model": "claude-fable-5",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "Autumn"}],
        },
    )
    assert refused["error"]["message"] == (
        "This model does not support assistant message prefill. The conversation must end with a user message."
    )


# -- the budget families ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model_id", ["claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5-20251001"])
async def test_the_budget_families_still_send_a_budget(server: FakeAnthropicThinking, model_id: str) -> None:
    server.add(Thought(blocks=(Think(PARIS_THOUGHT), "22 C.")))
    model = make_anthropic(server, model_id)  # type: ignore[arg-type]
    try:
        await llm.model(model).reasoning(effort="low").request("Weather?").prompt_async()
    finally:
        await model.aclose()
    (body,) = server.bodies
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2_048} and "output_config" not in body
    assert rules_for(model_id).modes == {"enabled"}  # the fake would refuse adaptive thinking for this model
    refused = await post(server, {**body, "thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}})
    assert refused["error"]["message"] == "adaptive thinking is not supported on this model"


async def test_the_fake_keeps_the_manual_rule_for_a_bare_continuation_and_relaxes_it_in_adaptive_mode(
    server: FakeAnthropicThinking,
) -> None:
    bare = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 5_000,
        "thinking": {"type": "enabled", "budget_tokens": 2_048},
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "w", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "22 C"}]},
        ],
    }
    refused = await post(server, bare)
    assert refused["error"]["message"].startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."
    )
    server.add(Thought(blocks=("22 C.",)))
    answered = await post(server, {**bare, "model": "claude-opus-4-7", "thinking": {"type": "adaptive"}})
    assert answered["content"] == [{"type": "text", "text": "22 C."}]
