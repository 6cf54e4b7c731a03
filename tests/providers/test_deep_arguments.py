"""Tool-call arguments nested far too deeply, from a model over real HTTP (issue 31, 2.7).

A model answered a tool call whose arguments JSON nests 3,000 levels deep, and the model call failed with
`RecursionError` (200 levels: a `ValueError` from the log's own limit): the turn stopped, and the model never heard
what was wrong. Now the arguments are kept as their text (``raw_arguments``), the tool result is the usual "invalid
arguments" error the model reads and the loop goes on, on every adapter, streamed or not, with the log stored whole
in SQLite. Only a JSON body whose tool input itself nests too deeply to be read at all (Anthropic's non-streamed
answer, whose ``input`` is an object in the body) fails the call, as a ``bad_response`` logged like any failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from threadline import AssistantMessage, ToolMessage, UserMessage, llm
from threadline._text import MAX_NESTING
from threadline.errors import ModelError
from threadline.store import open_store

from .conftest import make_anthropic, make_openai, make_responses
from .servers import Answer, Chunks, Events, FakeAnthropic, FakeOpenAI, FakeResponses, FakeServer, Status, ToolUse
from .servers._base import Verbatim

SERVERS: dict[str, Any] = {
    "openai": (FakeOpenAI, make_openai),
    "anthropic": (FakeAnthropic, make_anthropic),
    "responses": (FakeResponses, make_responses),
}


def get_weather(city: Any) -> str:
    """The current weather in a city."""
    return f"22 C in {city}"


def nested(depth: int) -> str:
    """Arguments whose JSON nests ``depth`` objects deep (compact, as msgspec writes it)."""
    return '{"city":' + '{"a":' * (depth - 1) + '"Paris"' + "}" * depth


def unreadable(kind: str, stream: bool, depth: int) -> bool:
    """Whether the answer itself is too deep to read: Anthropic's JSON body carries the tool input as an object, so
    past what a JSON reader can build the body cannot be read at all (a stream carries it as text)."""
    return kind == "anthropic" and not stream and depth > 900


# Every adapter, streamed or not, just past the limit, past what msgspec reads (about 1,000 levels), and far past it;
# one stream of 100,000 levels (70,000 events) is enough, the others take the same path.
CASES = [
    (kind, stream, depth)
    for kind in SERVERS
    for stream in (False, True)
    for depth in (MAX_NESTING + 1, 200, 3_000, 100_000)
    if not (stream and depth == 100_000 and kind != "openai")
]


@pytest.mark.parametrize(("kind", "stream", "depth"), CASES)
async def test_arguments_nested_too_deeply_are_an_error_result_the_model_reads(
    kind: str, stream: bool, depth: int, tmp_path: Path
) -> None:
    server_class, make = SERVERS[kind]
    with server_class() as server:
        model = make(server)
        try:
            await _run(kind, server, model, stream, depth, tmp_path)
        finally:
            await model.aclose()


async def _run(kind: str, server: FakeServer, model: Any, stream: bool, depth: int, tmp_path: Path) -> None:
    arguments = nested(depth)
    server.add(Answer(tool_calls=(ToolUse("get_weather", arguments),)), Answer("Which city, plainly?"))
    store = open_store(f"sqlite:///{tmp_path / 'log.db'}")
    conversation = (
        llm.model(model)
        .tools(get_weather)
        .store(store)
        .request("Weather?")
        .prompt_conversation(stream=stream, max_retries=0)
    )
    try:
        if unreadable(kind, stream, depth):
            with pytest.raises(ModelError) as failed:
                async for _ in conversation:
                    pass
            assert failed.value.type == "bad_response"
            assert "nested too deeply" in str(failed.value)
            _question, failure = conversation.messages
            assert isinstance(failure, AssistantMessage) and failure.error is not None
            assert failure.error.type == "bad_response"
        else:
            messages = [message async for message in conversation]
            call_message, result, final = messages
            assert isinstance(call_message, AssistantMessage) and isinstance(result, ToolMessage)
            (call,) = call_message.tool_calls
            assert call.arguments == {} and call.raw_arguments == arguments  # what the model sent, kept as text
            assert result.is_error
            assert f"nested more than {MAX_NESTING} levels deep" in result.content
            assert final.content == "Which city, plainly?"
            # The model was told: the second request carries the call and its error result.
            assert server.count == 2
            assert "nested more than" in server.requests[1].body.decode()
        conversation.messages.validate()
        assert isinstance(conversation.messages[0], UserMessage)
        stored = store.load(conversation.id)
        stored.validate()
        assert stored == conversation.messages
    finally:
        store.close()


async def drain(conversation: Any) -> None:
    async for _ in conversation:
        pass


# -- anything else nested too deeply to read --------------------------------------------------------------------------

DEEP = "[" * 3_000 + "]" * 3_000
# A stream event of each API that is read (not skipped), carrying a field nested too deeply to read.
FIRST_EVENTS = {
    "openai": (None, '{"id": "c1", "object": "chat.completion.chunk", "choices": [], "x": ' + DEEP + "}"),
    "anthropic": ("message_start", '{"type": "message_start", "message": {"content": [], "x": ' + DEEP + "}}"),
    "responses": ("response.output_text.delta", '{"type": "response.output_text.delta", "x": ' + DEEP + "}"),
}


@pytest.mark.parametrize("kind", list(SERVERS))
async def test_an_error_body_nested_too_deeply_is_shown_as_its_text(kind: str) -> None:
    """Before: the error body was decoded to find its message, and the call failed with `RecursionError`."""
    server_class, make = SERVERS[kind]
    with server_class() as server:
        model = make(server)
        server.add(Status(400, Verbatim('{"error": {"message": ' + DEEP + "}}")))
        try:
            with pytest.raises(ModelError) as failed:
                await drain(llm.model(model).request("Hi").prompt_conversation(max_retries=0))
        finally:
            await model.aclose()
    assert failed.value.type == "bad_request" and failed.value.status == 400
    assert '{"error": {"message": [[[' in str(failed.value)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("kind", list(SERVERS))
async def test_an_answer_nested_too_deeply_to_read_is_a_bad_response(kind: str, stream: bool) -> None:
    """A body or a stream event with any field nested too deeply for a decoder: a logged ``bad_response``, not a
    `RecursionError` (before)."""
    server_class, make = SERVERS[kind]
    with server_class() as server:
        model = make(server)
        if stream:
            server.add(Events((FIRST_EVENTS[kind],)))
        else:
            body = '{"id": "x", "choices": [], "content": [], "x": ' + DEEP + "}"
            server.add(Chunks((body.encode(),), "application/json"))
        conversation = llm.model(model).request("Hi").prompt_conversation(stream=stream, max_retries=0)
        try:
            with pytest.raises(ModelError) as failed:
                await drain(conversation)
        finally:
            await model.aclose()
    assert failed.value.type == "bad_response" and "nested too deeply to read" in str(failed.value)
    conversation.messages.validate()
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    assert failure.error.type == "bad_response"
