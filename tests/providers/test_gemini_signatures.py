"""Gemini's thought signatures on its OpenAI-compatible API, over real HTTP against a fake that signs each step's
first tool call and refuses, with Google's own error, a tool loop that sends a call back without its signature
(see `tests.providers.servers.gemini`). The signature is kept in the log as a `Reasoning` piece naming its call,
survives a save and reload, goes back only to Gemini, and never to another server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from threadline import AssistantMessage, Conversation, MessageList, ModelError, Reasoning, llm
from threadline.conversation.config import ConversationConfig

from .conftest import SECRET, make_openai
from .servers import Answer, FakeOpenAI, Status, ToolUse
from .servers.gemini import FakeGemini, thought_signature

PARIS = ToolUse("get_weather", '{"city": "Paris"}', id="call_paris")
ROME = ToolUse("get_weather", '{"city": "Rome"}', id="call_rome")


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C in {city}"


@pytest.fixture
def gemini() -> Iterator[FakeGemini]:
    with FakeGemini() as fake:
        yield fake  # type: ignore[misc]


def signatures(message: object) -> list[Reasoning]:
    assert isinstance(message, AssistantMessage)
    return [piece for piece in message.reasoning if piece.provider == "google"]


@pytest.mark.parametrize("stream", [True, False])
async def test_a_tool_loop_sends_each_signature_back_on_its_call(gemini: FakeGemini, stream: bool) -> None:
    model = make_openai(gemini, "gemini-3-pro-preview")  # type: ignore[arg-type]
    gemini.add(Answer(tool_calls=(PARIS, ROME)), Answer(tool_calls=(ROME,)), Answer("Both 22 C."))
    try:
        conversation = llm.model(model).tools(get_weather).request("Paris and Rome?").prompt_conversation(stream=stream)
        messages = [message async for message in conversation]
    finally:
        await model.aclose()
    assert messages[-1].content == "Both 22 C."
    first = signatures(messages[0])
    assert [(piece.id, piece.signature, piece.text) for piece in first] == [
        (messages[0].tool_calls[0].id, thought_signature("get_weather", PARIS.arguments), "")  # type: ignore[union-attr]
    ]
    # The second and third requests carry the first call's signature on that call, and on it alone.
    sent = [message for message in gemini.bodies[2]["messages"] if message["role"] == "assistant"]
    wire_calls = sent[0]["tool_calls"]
    assert wire_calls[0]["extra_content"] == {"google": {"thought_signature": first[0].signature}}
    assert "extra_content" not in wire_calls[1]
    conversation.messages.validate()


async def test_without_the_signature_gemini_refuses_the_loop(gemini: FakeGemini) -> None:
    """What the replay prevents: the same model under a name threadline does not take for Gemini sends nothing back,
    and the loop fails with Google's error; the server option turns it on."""
    gemini.add(Answer(tool_calls=(PARIS,)), Answer(tool_calls=(PARIS,)), Answer("22 C."))
    plain = make_openai(gemini, "my-alias")  # type: ignore[arg-type]
    told = make_openai(gemini, "my-alias", server="thought_signatures=send")  # type: ignore[arg-type]
    try:
        with pytest.raises(ModelError) as refused:
            await llm.model(plain).tools(get_weather).request("Paris?").prompt_async()
        # Google's message, read out of the list its endpoint wraps errors in.
        assert "(HTTP 400): Function call is missing a thought_signature in functionCall parts." in str(refused.value)
        assert str(await llm.model(told).tools(get_weather).request("Paris?").prompt_async()) == "22 C."
    finally:
        await plain.aclose()
        await told.aclose()


async def test_a_loop_saved_and_reloaded_mid_way_continues(gemini: FakeGemini, tmp_path: Path) -> None:
    model = make_openai(gemini, "gemini-3-flash")  # type: ignore[arg-type]
    gemini.add(Answer(tool_calls=(PARIS,)), Answer("22 C in Paris."))
    try:
        config = ConversationConfig(model=model, tools=[get_weather])
        conversation = Conversation(config=config)
        conversation.continuation.request("Paris?")
        async for message in conversation.run():
            if isinstance(message, AssistantMessage) and message.tool_calls:
                break  # stop before the tool runs: the log ends with an unanswered call
        path = tmp_path / "log.json"
        path.write_text(conversation.messages.to_json())
        reloaded = Conversation(messages=MessageList.from_json(path.read_text()), config=config)
        messages = [message async for message in reloaded.run()]
    finally:
        await model.aclose()
    assert messages[-1].content == "22 C in Paris."
    sent = next(message for message in gemini.bodies[-1]["messages"] if message["role"] == "assistant")
    assert sent["tool_calls"][0]["extra_content"]["google"]["thought_signature"] == thought_signature(
        "get_weather", PARIS.arguments
    )


async def test_a_gemini_log_continues_on_another_server_without_its_signatures(
    gemini: FakeGemini, openai_server: FakeOpenAI
) -> None:
    model = make_openai(gemini, "gemini-3-pro-preview")  # type: ignore[arg-type]
    other = make_openai(openai_server, "gpt-4o-mini")
    gemini.add(Answer(tool_calls=(PARIS,)), Answer("22 C."))
    openai_server.add(Answer("Still 22 C."))
    try:
        conversation = llm.model(model).tools(get_weather).request("Paris?").prompt_conversation()
        [message async for message in conversation]
        await conversation.continuation.model(other).request("And now?").prompt_async()
    finally:
        await model.aclose()
        await other.aclose()
    assert "extra_content" not in str(openai_server.bodies[0])
    assert signatures(conversation.messages[1])  # the log keeps it


async def test_an_error_list_that_echoes_the_key_is_redacted(gemini: FakeGemini) -> None:
    """Google's list-wrapped error object is read like any other, and a key it echoes never reaches the error."""
    echo = [{"error": {"code": 400, "message": f"API key not valid: {SECRET}.", "status": "INVALID_ARGUMENT"}}]
    gemini.add(Status(400, echo))
    model = make_openai(gemini, "gemini-3-flash")  # type: ignore[arg-type]
    try:
        with pytest.raises(ModelError) as refused:
            await llm.model(model).request("hi").prompt_async()
    finally:
        await model.aclose()
    message = str(refused.value)
    assert "(HTTP 400): API key not valid:" in message
    assert SECRET not in message and SECRET[-8:] not in message
