"""``openai-responses:<model>`` end to end, through the public API, against a fake Responses API over real HTTP on
127.0.0.1 that issues encrypted reasoning it can verify and refuses, with OpenAI's own error text, a function call
sent back without the reasoning item that preceded it (see `tests.providers.servers.responses`)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import BaseModel

from threadline import (
    AssistantMessage,
    Conversation,
    Cost,
    MessageList,
    Reasoning,
    ToolMessage,
    Usage,
    UserMessage,
    llm,
    open_store,
)
from threadline.conversation.config import ConversationConfig
from threadline.errors import CapabilityError, ModelError
from threadline.models.openai_responses import OpenAIResponsesModel
from threadline.pricing.prices import prices_version

from .conftest import SECRET, make_responses
from .servers import Answer, Cut, Events, FakeResponses, Status, Thought, ToolUse

QUESTION = "Weather in Paris?"
PARIS = ToolUse("get_weather", '{"city": "Paris"}')


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C and sunny in {city}"


async def loop(model: OpenAIResponsesModel, stream: bool = True, **settings: object) -> tuple[Conversation, list[str]]:
    """One question through a tool round, the thinking shown as it comes collected."""
    thoughts: list[str] = []
    builder = llm.model(model).tools(get_weather).reasoning(effort="low").request(QUESTION)
    conversation = builder.prompt_conversation(stream=stream, **settings)
    async for _ in conversation.run(on_reasoning=thoughts.append):
        pass
    conversation.messages.validate()
    return conversation, thoughts


def reasoning_items(body: dict[str, object]) -> list[dict[str, object]]:
    return [item for item in body["input"] if item["type"] == "reasoning"]  # type: ignore[attr-defined,index]


# -- the tool loop ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_a_tool_loop_with_reasoning_passes_the_servers_check(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel, stream: bool
) -> None:
    responses_server.add(
        Thought(summaries=("**Checking the weather**\n\nI should call get_weather.",), tool_calls=(PARIS,)),
        Thought("It is 22 C and sunny in Paris.", summaries=("The tool answered.",)),
    )
    conversation, thoughts = await loop(responses_model, stream)
    _, call_message, result, answer = conversation.messages
    assert isinstance(call_message, AssistantMessage) and isinstance(result, ToolMessage)
    assert isinstance(answer, AssistantMessage) and answer.content == "It is 22 C and sunny in Paris."
    first_id, second_id = responses_server.reasoning_ids
    (thought,) = call_message.reasoning
    assert thought.text == "**Checking the weather**\n\nI should call get_weather."
    # The fake server is not OpenAI's own API: its pieces name it by host and port, and go back to it alone.
    assert (thought.provider, thought.id) == (f"openai-responses@127.0.0.1:{responses_server.port}", first_id)
    assert thought.redacted and thought.redacted.startswith("gAAAAA")  # the server's sealed token, kept verbatim
    assert answer.reasoning[0].id == second_id
    assert "".join(thoughts) == "**Checking the weather**\n\nI should call get_weather.\n\nThe tool answered."
    # The second request handed the reasoning back before its call, and the server (which refuses it otherwise)
    # answered.
    assert responses_server.count == 2
    second = responses_server.bodies[1]
    assert second["store"] is False and second["include"] == ["reasoning.encrypted_content"]
    assert [item["type"] for item in second["input"]] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert second["input"][1] == {
        "type": "reasoning",
        "id": first_id,
        "summary": [{"type": "summary_text", "text": thought.text}],
        "encrypted_content": thought.redacted,
    }
    assert second["input"][2]["call_id"] == call_message.tool_calls[0].id == result.tool_call_id
    assert second["reasoning"] == {"effort": "low", "summary": "auto"}
    assert second.get("stream", False) is stream


async def test_the_server_refuses_a_call_whose_reasoning_was_dropped_or_altered(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel
) -> None:
    responses_server.add(Thought(tool_calls=(PARIS,)), Thought("22 C."))
    conversation, _ = await loop(responses_model)
    call_message = conversation.messages[1]
    assert isinstance(call_message, AssistantMessage)
    rs_id = call_message.reasoning[0].id
    assert rs_id is not None

    dropped = MessageList.from_json(conversation.messages[:3].to_json())  # a copy: the log itself stays whole
    dropped[1].reasoning = []  # type: ignore[union-attr]
    with pytest.raises(ModelError) as info:
        await Conversation(messages=dropped).continuation.model(responses_model).tools(get_weather).prompt_async()
    assert info.value.status == 400 and not info.value.retryable
    assert "of type 'function_call' was provided without its required 'reasoning' item: " + f"'{rs_id}'" in str(
        info.value
    )

    altered = MessageList.from_json(conversation.messages[:3].to_json())
    token = altered[1].reasoning[0].redacted  # type: ignore[union-attr]
    altered[1].reasoning[0].redacted = token[:-4] + "0000"  # type: ignore[union-attr,index]
    with pytest.raises(ModelError) as info:
        await Conversation(messages=altered).continuation.model(responses_model).tools(get_weather).prompt_async()
    assert f"The encrypted content for item {rs_id} could not be verified" in str(info.value)


async def test_several_summary_parts_round_trip_as_one_item(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel
) -> None:
    parts = ("**Reading the question**\n\nParis.", "**Choosing a tool**\n\nget_weather.", "**Ready**\n\nCalling.")
    responses_server.add(Thought(summaries=parts, tool_calls=(PARIS,)), Thought("22 C."))
    conversation, thoughts = await loop(responses_model)
    pieces = conversation.messages[1].reasoning  # type: ignore[union-attr]
    assert [piece.text for piece in pieces] == list(parts)
    assert len({piece.id for piece in pieces}) == 1  # one item, three summary parts
    assert pieces[0].redacted and pieces[1].redacted is None and pieces[2].redacted is None
    assert "".join(thoughts).startswith("\n\n".join(parts))  # shown part by part
    (item,) = reasoning_items(responses_server.bodies[1])
    assert item["summary"] == [{"type": "summary_text", "text": text} for text in parts]
    assert item["encrypted_content"] == pieces[0].redacted


async def test_reasoning_between_calls_goes_back_between_them(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel
) -> None:
    rome = ToolUse("get_weather", '{"city": "Rome"}')
    responses_server.add(Thought(tool_calls=(PARIS, rome), per_call=True), Thought("Both 22 C."))
    conversation, _ = await loop(responses_model)
    calls = conversation.messages[1]
    assert isinstance(calls, AssistantMessage) and [piece.position for piece in calls.reasoning] == [None, 2]
    kinds = [item["type"] for item in responses_server.bodies[1]["input"]]
    assert kinds[1:5] == ["reasoning", "function_call", "reasoning", "function_call"]


@pytest.mark.parametrize("where", ["json", "sqlite"])
async def test_a_log_saved_mid_loop_reloads_and_the_loop_continues(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel, tmp_path: Path, where: str
) -> None:
    responses_server.add(Thought(summaries=("Call it.",), tool_calls=(PARIS,)), Thought("22 C and sunny."))
    config = ConversationConfig(model=responses_model, tools=[get_weather])
    store = open_store(tmp_path / "log.db")
    conversation = Conversation(config=config, store=store)
    async for message in conversation.continuation.reasoning(effort="low").request(QUESTION).prompt_conversation():
        if isinstance(message, ToolMessage):
            break  # the process stops between the tool result and the next request
    if where == "json":
        path = tmp_path / "log.json"
        path.write_text(conversation.messages.to_json())
        resumed = Conversation(messages=MessageList.from_json(path.read_text()), config=config)
    else:
        resumed = Conversation.load(conversation.id, store, config)
    assert [type(m).__name__ for m in resumed.messages] == ["UserMessage", "AssistantMessage", "ToolMessage"]
    answer = [message async for message in resumed.run()]
    assert answer[-1].content == "22 C and sunny."  # type: ignore[union-attr]
    assert responses_server.count == 2 and reasoning_items(responses_server.bodies[1])[0]["summary"] == [
        {"type": "summary_text", "text": "Call it."}
    ]
    resumed.messages.validate()


# -- what else an answer holds ----------------------------------------------------------------------------------------


class City(BaseModel):
    name: str
    country: str


async def test_structured_output_uses_the_json_schema_format(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel
) -> None:
    responses_server.add(Thought('{"name": "Paris", "country": "France"}'))
    city = await llm.model(responses_model).request("Capital of France?").prompt_for_type_async(City)
    assert city == City(name="Paris", country="France")
    text = responses_server.bodies[0]["text"]
    assert text["format"]["type"] == "json_schema" and text["format"]["name"] == "City"


async def test_structured_output_through_the_final_result_tool_where_the_format_is_missing(
    responses_server: FakeResponses,
) -> None:
    model = make_responses(responses_server, "gpt-4")  # a family without JSON-schema output
    responses_server.add(Answer(tool_calls=(ToolUse("final_result", '{"name": "Rome", "country": "Italy"}'),)))
    try:
        city = await llm.model(model).request("Capital of Italy?").prompt_for_type_async(City)
    finally:
        await model.aclose()
    assert city == City(name="Rome", country="Italy")
    body = responses_server.bodies[0]
    assert body["tool_choice"] == {"type": "function", "name": "final_result"} and "text" not in body


async def test_usage_counts_reasoning_tokens(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel
) -> None:
    responses_server.add(Thought("Paris.", input_tokens=30, output_tokens=90, reasoning_tokens=64))
    conversation = llm.model(responses_model).request("Capital of France?").prompt_conversation()
    async for _ in conversation:
        pass
    # o4-mini: $1.10 per million input tokens, $4.40 per million output tokens (reasoning included)
    cost = Cost(usd=Decimal("0.000429"), prices=prices_version())
    usage = Usage(input_tokens=30, output_tokens=90, reasoning_tokens=64, cost=cost)
    assert conversation.messages[-1].usage == usage  # type: ignore[union-attr]


async def test_a_model_that_does_not_reason_works_without_encrypted_reasoning(responses_server: FakeResponses) -> None:
    model = make_responses(responses_server, "gpt-4o-mini")
    responses_server.add(Answer(tool_calls=(PARIS,)), Answer("22 C."))
    try:
        conversation = llm.model(model).tools(get_weather).request(QUESTION).prompt_conversation()
        messages = [message async for message in conversation]
    finally:
        await model.aclose()
    assert messages[-1].content == "22 C." and messages[0].reasoning == []  # type: ignore[union-attr]
    assert all("include" not in body for body in responses_server.bodies)  # the server refuses it for this model


@pytest.mark.parametrize("name", ["gpt-5-chat-latest", "gpt-5.1-chat-latest", "openai/gpt-5.2-chat-latest"])
async def test_gpt5_chat_models_are_not_sent_reasoning_settings(responses_server: FakeResponses, name: str) -> None:
    """GPT-5's chat variants share the reasoning family's prefix but do not reason: OpenAI refuses
    ``include: ["reasoning.encrypted_content"]`` for them (pydantic/pydantic-ai#3326), and they keep a temperature."""
    model = make_responses(responses_server, name)
    responses_server.add(Answer(tool_calls=(PARIS,)), Answer("22 C."))
    try:
        conversation = llm.model(model).tools(get_weather).request(QUESTION).prompt_conversation(temperature=0.2)
        messages = [message async for message in conversation]
        with pytest.raises(CapabilityError, match="reasoning"):
            await llm.model(model).reasoning(effort="low").request(QUESTION).prompt_async()
    finally:
        await model.aclose()
    assert messages[-1].content == "22 C."
    assert len(responses_server.bodies) == 2  # the refused reasoning request never left
    assert all("include" not in body and "reasoning" not in body for body in responses_server.bodies)
    assert all(body["temperature"] == 0.2 for body in responses_server.bodies)


async def test_a_stop_at_max_output_tokens_is_a_length_stop(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel
) -> None:
    responses_server.add(Thought("Once upon a", incomplete="max_output_tokens"))
    result = llm.model(responses_model).request("A story").prompt_conversation(max_tokens=5)
    async for _ in result:
        pass
    assert result.messages[-1].content == "Once upon a"  # type: ignore[union-attr]
    assert responses_server.bodies[0]["max_output_tokens"] == 5


# -- failures ---------------------------------------------------------------------------------------------------------


async def failed(model: OpenAIResponsesModel, **settings: object) -> tuple[Conversation, ModelError]:
    conversation = llm.model(model).request(QUESTION).prompt_conversation(**settings)
    with pytest.raises(ModelError) as info:
        async for _ in conversation:
            pass
    conversation.messages.validate()
    assert isinstance(conversation.messages[0], UserMessage)  # the question is kept
    return conversation, info.value


@pytest.mark.parametrize("stream", [True, False])
async def test_an_output_item_of_an_unknown_type_is_a_logged_failure(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel, stream: bool
) -> None:
    # Items of hosted tools (web_search_call…) are skipped (see test_responses_answers); one of no known type is not.
    unknown = {"id": "hc_1", "type": "holodeck_call", "status": "completed", "action": {"type": "search"}}
    responses_server.add(Thought("Paris is sunny.", extra=(unknown,)))
    conversation, error = await failed(responses_model, stream=stream)
    assert error.type == "bad_response" and "'holodeck_call'" in str(error)
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    assert failure.error.type == "bad_response"
    assert failure.content == ("Paris is sunny." if stream else "")  # what was shown stays shown
    assert responses_server.count == 1  # the same answer would come again: not retried


async def test_a_stream_cut_mid_answer_is_a_logged_failure_and_its_thinking_is_never_replayed(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel
) -> None:
    answer = Thought("It is sunny in Paris today.", summaries=("Thinking about Paris.",))
    responses_server.add(Cut(answer, after=14))  # the connection breaks in the message's text deltas
    conversation, error = await failed(responses_model, reasoning="low")
    assert error.type == "connection" and error.retryable and error.partial
    assert responses_server.count == 1  # thinking and text were shown: no silent retry
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.content == error.partial
    origin = f"openai-responses@127.0.0.1:{responses_server.port}"
    assert failure.reasoning == [Reasoning(text="Thinking about Paris.", provider=origin)]
    # Continuing sends the partial text with its error block and none of the unsigned thinking.
    responses_server.add(Thought("Sunny."))
    assert await conversation.continuation.request("continue").prompt_async() == "Sunny."
    sent = responses_server.bodies[-1]["input"]
    assert [item["type"] for item in sent] == ["message", "message", "message"]
    assert sent[1]["content"][0]["text"].startswith(error.partial + "\n[LLM_ERROR type=connection")


def opening(*deltas: str) -> Events:
    """A stream that ends cleanly before ``response.completed``: created, a message item, some text."""
    events: list[tuple[str | None, str]] = [
        ("response.created", json.dumps({"type": "response.created", "response": {"status": "in_progress"}})),
        (
            "response.output_item.added",
            json.dumps({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message"}}),
        ),
    ]
    for delta in deltas:
        data = {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": delta}
        events.append(("response.output_text.delta", json.dumps(data)))
    return Events(tuple(events))


async def test_a_stream_without_response_completed_is_cut_and_retried_while_nothing_was_shown(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel
) -> None:
    responses_server.add(opening(), Thought("Paris."))
    assert await llm.model(responses_model).request("Capital?").prompt_async() == "Paris."
    assert responses_server.count == 2
    responses_server.add(opening("Par"))
    conversation, error = await failed(responses_model)
    assert error.type == "stream_cut" and error.retryable and error.partial == "Par"
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.content == "Par" and failure.error is not None
    assert responses_server.count == 3


async def test_a_failed_response_in_the_stream_is_a_logged_failure(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel
) -> None:
    failed_event = {
        "type": "response.failed",
        "response": {"status": "failed", "error": {"code": "invalid_prompt", "message": "Flagged as unsafe."}},
    }
    responses_server.add(Events((("response.failed", json.dumps(failed_event)),)))
    _, error = await failed(responses_model)
    assert error.type == "invalid_prompt" and "Flagged as unsafe." in str(error)


async def test_429_with_retry_after_and_500_are_retried(
    responses_server: FakeResponses, responses_model: OpenAIResponsesModel
) -> None:
    responses_server.add(Status(429, headers=(("Retry-After", "0.05"),)), Status(500), Thought("Paris."))
    assert await llm.model(responses_model).request("Capital?").prompt_async() == "Paris."
    assert responses_server.count == 3
    first, second, _ = responses_server.requests
    assert second.at - first.at >= 0.05


async def test_401_is_a_clear_error_with_no_key_anywhere(responses_server: FakeResponses) -> None:
    model = make_responses(responses_server)
    responses_server.add(Status(401), Thought("never"))
    try:
        conversation, error = await failed(model)
    finally:
        await model.aclose()
    assert responses_server.count == 1
    message = str(error)
    assert error.type == "auth" and "refused the credentials (HTTP 401): Incorrect API key provided" in message
    assert "The api_key given to OpenAIResponsesModel was refused" in message
    assert SECRET not in message and SECRET not in conversation.messages.to_json()
    assert responses_server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


async def test_a_stream_error_echoing_the_key_is_redacted(responses_server: FakeResponses) -> None:
    model = make_responses(responses_server)
    event = {"type": "error", "code": "server_error", "message": f"upstream said: bad key {SECRET}", "param": None}
    responses_server.add(Events((("error", json.dumps(event)),)))
    try:
        conversation, error = await failed(model, max_retries=0)
    finally:
        await model.aclose()
    assert "upstream said: bad key" in str(error)
    assert SECRET not in str(error) and SECRET not in conversation.messages.to_json()
