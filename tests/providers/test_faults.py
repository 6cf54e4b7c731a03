"""Provider faults (docs/failure-rules.md#provider-failures) on both adapters, over real HTTP: each ends in a retry that
succeeds or a logged failure with the partial output; the user's message is never lost and the log always validates.
Retry counts are read from the fake server's own request counter."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest

from threadline import AssistantMessage, Conversation, ToolMessage, UserMessage, llm
from threadline.errors import ModelError
from threadline.models.http._transport import BODY_LIMIT

from .conftest import SECRET, Provider, make_anthropic, make_openai
from .servers import Answer, Chunks, Close, Cut, Events, FakeAnthropic, FakeOpenAI, Hang, Status, ToolUse, Trickle

QUESTION = "Tell me a story."
STORY = "Once upon a time a fox found a lantern in the snow."


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C in {city}"


async def fail(model: object, **settings: object) -> tuple[Conversation, ModelError]:
    conversation = llm.model(model).request(QUESTION).prompt_conversation(**settings)  # type: ignore[arg-type]
    with pytest.raises(ModelError) as info:
        async for _ in conversation:
            pass
    return conversation, info.value


def assert_logged_failure(conversation: Conversation, error: ModelError, partial: str = "") -> AssistantMessage:
    log = conversation.messages
    log.validate()
    user_message, failed = log
    assert isinstance(user_message, UserMessage) and user_message.content == QUESTION  # the question is kept
    assert isinstance(failed, AssistantMessage) and failed.error is not None
    assert failed.error.type == error.type
    assert failed.error.retryable == error.retryable
    assert failed.content == partial
    assert error.partial == partial
    return failed


async def answer(model: object, **settings: object) -> Conversation:
    conversation = llm.model(model).request(QUESTION).prompt_conversation(**settings)  # type: ignore[arg-type]
    async for _ in conversation:
        pass
    conversation.messages.validate()
    first = conversation.messages[0]
    assert isinstance(first, UserMessage) and first.content == QUESTION
    return conversation


# -- refused credentials ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
async def test_refused_credentials_fail_at_once_with_a_hint_and_no_key(provider: Provider, status: int) -> None:
    provider.server.add(Status(status))
    conversation, error = await fail(provider.model, max_retries=3)
    assert provider.server.count == 1  # never retried
    assert error.type == "auth" and error.status == status and not error.retryable
    message = str(error)
    assert "refused the credentials" in message
    assert "The api_key given to" in message  # the hint says which key was used, never its value
    assert SECRET not in message
    assert "wxyz" not in message  # the server echoed a masked key; even that is not repeated
    assert_logged_failure(conversation, error)


async def test_missing_key_hint_names_the_variable(openai_server: FakeOpenAI) -> None:
    model = make_openai(openai_server, api_key="")
    openai_server.add(Status(401))
    try:
        _, error = await fail(model)
    finally:
        await model.aclose()
    assert "No key is set: set OPENAI_API_KEY" in str(error)


# -- rate limits and server errors --------------------------------------------------------------------------------


async def test_429_waits_as_long_as_retry_after_says(provider: Provider) -> None:
    provider.server.add(Status(429, headers=(("Retry-After", "1"),)), Answer(STORY))
    conversation = await answer(provider.model)
    assert provider.server.count == 2
    first, second = provider.server.requests
    assert second.at - first.at >= 0.9  # the backoff alone would have been ~10 ms
    assert conversation.text == STORY
    assert [type(m) for m in conversation.messages] == [UserMessage, AssistantMessage]


@pytest.mark.parametrize("stream", [True, False])
async def test_server_errors_are_retried_until_an_answer(provider: Provider, stream: bool) -> None:
    statuses = (500, 503) if provider.name == "openai" else (500, 529)
    provider.server.add(*(Status(s) for s in statuses), Answer(STORY))
    conversation = await answer(provider.model, stream=stream)
    assert provider.server.count == 3
    assert conversation.text == STORY


@pytest.mark.parametrize(("max_retries", "attempts"), [(0, 1), (1, 2), (2, 3)])
async def test_retries_are_bounded_by_max_retries(provider: Provider, max_retries: int, attempts: int) -> None:
    provider.server.add(*(Status(502) for _ in range(5)))
    conversation, error = await fail(provider.model, max_retries=max_retries)
    assert provider.server.count == attempts
    assert error.type == "server" and error.status == 502 and error.retryable
    if attempts > 1:
        assert f"gave up after {attempts} attempts" in str(error)
    assert_logged_failure(conversation, error)


async def test_a_bad_request_is_not_retried_and_says_why(provider: Provider) -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": "messages: field required"}}
    provider.server.add(Status(400, body=body))
    conversation, error = await fail(provider.model)
    assert provider.server.count == 1
    assert error.type == "bad_request" and error.status == 400 and not error.retryable
    assert "messages: field required" in str(error)
    assert_logged_failure(conversation, error)


# -- connections and timeouts -------------------------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("name", ["openai", "anthropic"])
async def test_a_refused_connection_is_retried_then_logged(name: str) -> None:
    port = closed_port()
    if name == "openai":
        from threadline.models.openai import OpenAIModel

        model: object = OpenAIModel("gpt-4o-mini", base_url=f"http://127.0.0.1:{port}/v1", retry_base_delay=0.01)
    else:
        from threadline.models.anthropic import AnthropicModel

        model = AnthropicModel("claude-haiku-4-5", base_url=f"http://127.0.0.1:{port}", retry_base_delay=0.01)
    try:
        conversation, error = await fail(model, max_retries=2)
    finally:
        await model.aclose()  # type: ignore[attr-defined]
    assert error.type == "connection" and error.retryable
    assert "could not connect" in str(error) and "gave up after 3 attempts" in str(error)
    assert_logged_failure(conversation, error)


@pytest.mark.parametrize("stream", [True, False])
async def test_a_read_timeout_is_retried_then_logged(provider: Provider, stream: bool) -> None:
    provider.server.add(Hang(5), Hang(5))
    conversation, error = await fail(provider.model, stream=stream, timeout=0.3, max_retries=1)
    assert provider.server.count == 2
    assert error.type == "timeout" and error.retryable
    assert "did not answer within 0.3 s" in str(error)
    assert_logged_failure(conversation, error)


# A server that sends one byte at a time, never pausing long enough for a read timeout: before, the call waited for
# as long as the server kept it up (about 25 minutes for this answer at 0.1 s a byte).
LONG_STORY = " ".join([STORY] * 40)


async def test_a_trickling_stream_fails_at_the_timeout_keeping_what_was_shown(provider: Provider) -> None:
    provider.server.add(Trickle(Answer(LONG_STORY), interval=0.1, after=6), Answer("never reached"))
    async with asyncio.timeout(30):  # only proves that it did not hang: the call's own timeout is 1.5 s
        conversation, error = await fail(provider.model, timeout=1.5, max_retries=2)
    assert provider.server.count == 1  # text was shown: no silent retry
    assert error.type == "timeout" and error.retryable
    assert "did not answer within 1.5 s (the timeout covers the whole answer)" in str(error)
    assert error.partial and LONG_STORY.startswith(error.partial)
    assert f"cut off after {len(error.partial)} characters" in str(error)
    assert_logged_failure(conversation, error, partial=error.partial)


@pytest.mark.parametrize("stream", [True, False])
async def test_a_trickling_answer_before_any_text_is_retried_as_a_timeout(provider: Provider, stream: bool) -> None:
    # Streamed, the trickle starts before the first event is whole; not streamed, the body itself trickles.
    provider.server.add(Trickle(Answer(LONG_STORY), interval=0.1), Trickle(Answer(LONG_STORY), interval=0.1))
    async with asyncio.timeout(30):
        conversation, error = await fail(provider.model, stream=stream, timeout=1.0, max_retries=1)
    assert provider.server.count == 2  # retried as timeouts are
    assert error.type == "timeout" and error.retryable
    assert "did not answer within 1 s (the timeout covers the whole answer)" in str(error)
    assert_logged_failure(conversation, error)


async def test_a_trickling_answer_is_retried_and_the_retry_answers(provider: Provider) -> None:
    provider.server.add(Trickle(Answer(LONG_STORY), interval=0.1), Answer(STORY))
    async with asyncio.timeout(30):
        conversation = await answer(provider.model, stream=False, timeout=1.0)
    assert provider.server.count == 2
    assert conversation.text == STORY


@pytest.mark.parametrize("stream", [True, False])
async def test_a_connection_closed_without_an_answer_is_retried(provider: Provider, stream: bool) -> None:
    provider.server.add(Close(), Answer(STORY))
    conversation = await answer(provider.model, stream=stream)
    assert provider.server.count == 2
    assert conversation.text == STORY


async def test_a_body_cut_in_the_middle_is_retried(provider: Provider) -> None:
    provider.server.add(Cut(Answer(STORY)), Answer(STORY))
    conversation = await answer(provider.model, stream=False)
    assert provider.server.count == 2
    assert conversation.text == STORY


@pytest.mark.parametrize("status", [200, 500])
async def test_a_body_that_never_ends_fails_the_call_once_it_passes_the_limit(provider: Provider, status: int) -> None:
    """A broken server (or something in between) sending an answer without end: the read timeout never fires while
    bytes come, so the call fails once the body passes `BODY_LIMIT`, memory stays bounded, no retry repeats it, and
    the log keeps the question and the failure."""
    piece = b" " * (1 << 20)
    pieces = (b'{"id": "x", ', *(piece for _ in range(BODY_LIMIT // len(piece) + 2)))
    provider.server.add(Chunks(pieces, content_type="application/json", status=status), Answer(STORY))
    conversation, error = await fail(provider.model, stream=False)
    assert error.type == "bad_response"
    assert f"passed {BODY_LIMIT:,} bytes" in error.message
    assert provider.server.count == 1
    assert_logged_failure(conversation, error)


async def test_a_stream_cut_before_any_text_is_retried(provider: Provider) -> None:
    provider.server.add(Cut(Answer(STORY), after=1), Answer(STORY))
    conversation = await answer(provider.model)
    assert provider.server.count == 2
    assert conversation.text == STORY


async def test_a_stream_cut_mid_answer_keeps_the_partial_text_and_continue_resumes(provider: Provider) -> None:
    provider.server.add(Cut(Answer(STORY), after=6))
    conversation, error = await fail(provider.model, max_retries=3)
    assert provider.server.count == 1  # text was already shown: no silent retry
    assert error.partial and STORY.startswith(error.partial) and error.partial != STORY
    assert error.type == "connection" and error.retryable
    assert f"cut off after {len(error.partial)} characters" in str(error)
    failed = assert_logged_failure(conversation, error, partial=error.partial)

    # "continue" sends the failed turn as an assistant message ending in the [LLM_ERROR …] block.
    provider.server.add(Answer("…and it glowed."))
    await conversation.continuation.request("continue").prompt_async()
    body = provider.server.bodies[-1]
    if provider.name == "openai":
        sent = body["messages"][-2]
        assert sent["role"] == "assistant"
        text = sent["content"]
    else:
        sent = body["messages"][-2]
        assert sent["role"] == "assistant"
        text = sent["content"][0]["text"]
    assert text.startswith(error.partial.rstrip())
    assert f"[LLM_ERROR type={failed.error.type} message=" in text  # type: ignore[union-attr]
    conversation.messages.validate()
    assert conversation.text == "…and it glowed."


# -- what the model says ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_an_empty_answer_is_retried(provider: Provider, stream: bool) -> None:
    provider.server.add(Answer(), Answer(STORY))
    conversation = await answer(provider.model, stream=stream)
    assert provider.server.count == 2
    assert conversation.text == STORY


async def test_empty_answers_every_time_end_in_a_logged_failure(provider: Provider) -> None:
    provider.server.add(Answer(), Answer(), Answer())
    conversation, error = await fail(provider.model, max_retries=2)
    assert provider.server.count == 3
    assert error.type == "empty_response"
    assert_logged_failure(conversation, error)


@pytest.mark.parametrize("stream", [True, False])
async def test_invalid_tool_argument_json_becomes_an_error_result_and_the_loop_goes_on(
    provider: Provider, stream: bool
) -> None:
    if provider.name == "anthropic" and not stream:
        # Anthropic's JSON body always carries "input" as an object; only its stream can carry broken JSON.
        provider.server.add(Answer(tool_calls=(ToolUse("get_weather", '"Paris"'),)), Answer("Which city?"))
    else:
        provider.server.add(Answer(tool_calls=(ToolUse("get_weather", '{"city": "Par'),)), Answer("Which city?"))
    conversation = llm.model(provider.model).tools(get_weather).request("Weather?").prompt_conversation(stream=stream)
    messages = [message async for message in conversation]
    call_message, result, final = messages
    assert isinstance(call_message, AssistantMessage) and isinstance(result, ToolMessage)
    (call,) = call_message.tool_calls
    assert call.arguments == {} and call.raw_arguments is not None
    assert result.is_error and "not valid JSON" in result.content
    assert final.content == "Which city?"
    conversation.messages.validate()
    second = provider.server.bodies[1]
    if provider.name == "openai":
        assert second["messages"][-2]["tool_calls"][0]["function"]["arguments"] == call.raw_arguments  # verbatim
    else:
        assert second["messages"][-2]["content"][0]["input"] == {}
        assert second["messages"][-1]["content"][0]["is_error"] is True


async def test_an_unknown_tool_name_becomes_an_error_result(provider: Provider) -> None:
    provider.server.add(Answer(tool_calls=(ToolUse("launch_rocket", "{}"),)), Answer("I cannot do that."))
    conversation = llm.model(provider.model).tools(get_weather).request("Go").prompt_conversation()
    messages = [message async for message in conversation]
    assert isinstance(messages[1], ToolMessage) and messages[1].is_error
    assert "Unknown tool 'launch_rocket'" in messages[1].content
    assert conversation.text == "I cannot do that."
    conversation.messages.validate()


async def test_a_stream_error_event_before_text_is_retried_and_after_text_is_logged(
    anthropic_server: FakeAnthropic,
) -> None:
    overloaded = (
        "error",
        json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    )
    start = ("message_start", json.dumps({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}))
    block = (
        "content_block_start",
        json.dumps({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    )
    delta = (
        "content_block_delta",
        json.dumps({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Once upon"}}),
    )
    anthropic_server.add(Events((start, overloaded)), Answer(STORY), Events((start, block, delta, overloaded)))
    model = make_anthropic(anthropic_server)
    try:
        conversation = await answer(model)
        assert anthropic_server.count == 2 and conversation.text == STORY
        conversation, error = await fail(model)
    finally:
        await model.aclose()
    assert anthropic_server.count == 3
    assert error.type == "overloaded" and error.retryable
    assert_logged_failure(conversation, error, partial="Once upon")


async def test_an_openai_stream_error_chunk_is_mapped(openai_server: FakeOpenAI) -> None:
    error_chunk = (None, json.dumps({"error": {"message": "The model is overloaded", "type": "server_error"}}))
    text_chunk = (None, json.dumps({"choices": [{"index": 0, "delta": {"content": "Once"}, "finish_reason": None}]}))
    openai_server.add(Events((error_chunk,)), Answer(STORY), Events((text_chunk, error_chunk)))
    model = make_openai(openai_server)
    try:
        conversation = await answer(model)
        assert openai_server.count == 2 and conversation.text == STORY
        conversation, error = await fail(model)
    finally:
        await model.aclose()
    assert "The model is overloaded" in str(error)
    assert_logged_failure(conversation, error, partial="Once")


def test_retry_after_forms() -> None:
    import email.utils
    import time

    import httpx

    from threadline.models.http._retries import retry_after

    assert retry_after(httpx.Headers({"retry-after": "3"})) == 3.0
    assert retry_after(httpx.Headers({"retry-after-ms": "250", "retry-after": "3"})) == 0.25
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (retry_after(httpx.Headers({"retry-after": future})) or 0) <= 31
    assert retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after(httpx.Headers({})) is None
