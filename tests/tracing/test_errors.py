"""Failures as a tracing back end shows them: an ERROR status and ``error.type`` on the span that failed (the tool's,
the model call's, the turn's), retries as events on the model call's span, and never an API key anywhere.

Model failures come from the fake OpenAI server (tests/providers/servers: real HTTP on 127.0.0.1, OpenAI's error
bodies) through `OpenAIModel`, so the retries and the redaction are the transport's own."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from tests.providers.servers import Answer, FakeOpenAI, Status, ToolUse
from threadline import AssistantMessage, Conversation, ConversationConfig, ToolCall, UserMessage, llm
from threadline.errors import ModelError
from threadline.models.openai import OpenAIModel
from threadline.testing import ScriptedModel

from .conftest import Spans

KEY = "sk-proj-TRACEDKEY0123456789abcdefXYZ"
HEADER_SECRET = "hdr-Secret-value-98765"  # not key-shaped: only the transport's exact redaction can hide it


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake  # type: ignore[misc]


@pytest.fixture
async def model(server: FakeOpenAI) -> AsyncIterator[OpenAIModel]:
    """The adapter on the fake server, closed on the test's own loop (no pooled connection outlives it)."""
    made = OpenAIModel(
        "gpt-4o-mini",
        base_url=f"{server.root}/v1",
        api_key=KEY,
        headers={"X-Custom-Api-Key": HEADER_SECRET},
        retry_base_delay=0.01,
    )
    yield made
    await made.aclose()


def attributes(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


def call(name: str, id: str = "t1", **arguments: Any) -> AssistantMessage:
    return AssistantMessage(tool_calls=[ToolCall(id=id, name=name, arguments=arguments)])


def assert_failed(span: Any, error_type: str) -> None:
    assert span.status.status_code == StatusCode.ERROR, span.name
    assert attributes(span)["error.type"] == error_type


def test_a_tool_that_raises_ends_its_span_in_error_and_the_turn_goes_on(spans: Spans) -> None:
    def explode(what: str) -> str:
        """Fail."""
        raise ValueError(f"cannot {what}")

    answer = llm.model(ScriptedModel([call("explode", what="fly"), "Sorry."])).tools(explode).request("Fly").prompt()
    assert answer == "Sorry."
    assert_failed(spans.one("execute_tool explode"), "ValueError")
    # The message of a failure is the tool's text (content), recorded only with include_content.
    assert "cannot fly" not in spans.text()
    turn = spans.one("invoke_agent threadline")
    assert turn.status.status_code == StatusCode.UNSET  # the model read the error and answered
    assert all(span.status.status_code == StatusCode.UNSET for span in spans.named("chat scripted"))


def test_with_include_content_a_failed_tool_says_why(spans: Spans) -> None:
    spans.instrument(include_content=True)

    def explode(what: str) -> str:
        """Fail."""
        raise ValueError(f"cannot {what}")

    llm.model(ScriptedModel([call("explode", what="fly"), "Sorry."])).tools(explode).request("Fly").prompt()
    span = spans.one("execute_tool explode")
    assert span.status.description == "Tool 'explode' failed: ValueError: cannot fly"
    assert "gen_ai.tool.call.result" not in attributes(span)  # a result is recorded only for a successful call


class Unreadable(Exception):
    """An exception whose message cannot be read: its __str__ raises SystemExit (issue 31)."""

    def __str__(self) -> str:
        raise SystemExit("from __str__")


class UnreadableModelError(ModelError):
    """A custom model's own ModelError, whose __str__ raises."""

    def __str__(self) -> str:
        raise SystemExit("from __str__")


def test_a_tool_error_whose_message_cannot_be_read_ends_its_span_and_the_turn_goes_on(spans: Spans) -> None:
    spans.instrument(include_content=True)

    def explode() -> str:
        """Fail."""
        raise Unreadable

    answer = llm.model(ScriptedModel([call("explode"), "Sorry."])).tools(explode).request("Fly").prompt()
    assert answer == "Sorry."
    span = spans.one("execute_tool explode")
    assert_failed(span, "Unreadable")
    assert span.status.description == "Tool 'explode' failed: Unreadable (its message could not be read)"


def test_a_model_error_whose_message_cannot_be_read_ends_the_turns_span(spans: Spans) -> None:
    spans.instrument(include_content=True)
    failure = UnreadableModelError("hidden", type="server")
    conversation = llm.model(ScriptedModel([failure])).request("Hi").prompt_conversation()
    with pytest.raises(UnreadableModelError):  # the model's own error, not what reading its message raised
        conversation.continuation.prompt()
    turn = spans.one("invoke_agent threadline")
    assert turn.status.status_code == StatusCode.ERROR
    assert turn.status.description == "UnreadableModelError (its message could not be read)"
    logged = conversation.messages[-1]
    assert isinstance(logged, AssistantMessage) and logged.error is not None
    assert logged.error.message == "UnreadableModelError (its message could not be read)"


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_tool_that_times_out_ends_its_span_with_error_type_timeout(spans: Spans, kind: str) -> None:
    async def slow_async(seconds: float) -> str:
        """Wait."""
        await asyncio.sleep(seconds)
        return "done"

    def slow_sync(seconds: float) -> str:
        """Wait."""
        time.sleep(seconds)
        return "done"

    tool = slow_async if kind == "async" else slow_sync
    model = ScriptedModel([call(tool.__name__, seconds=2.0), "It took too long."])
    llm.model(model).tools(tool).request("Wait").prompt(tool_timeout=0.05)
    span = spans.one(f"execute_tool {tool.__name__}")
    assert_failed(span, "timeout")
    assert (span.end_time - span.start_time) / 1e9 < 1.5  # the span ends with the timeout, not with the tool


def test_bad_arguments_and_unknown_tools_have_their_own_error_types(spans: Spans) -> None:
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    script = [
        AssistantMessage(
            tool_calls=[
                ToolCall(id="u1", name="subtract", arguments={"a": 1}),
                ToolCall(id="b1", name="add", arguments={"a": "one"}),
                ToolCall(id="r1", name="add", arguments={}, raw_arguments='{"a": 1,'),
            ]
        ),
        "Done.",
    ]
    llm.model(ScriptedModel(script)).tools(add).request("Add").prompt()
    by_id = {attributes(span)["gen_ai.tool.call.id"]: span for span in spans.all if span.name.startswith("execute")}
    assert_failed(by_id["u1"], "unknown_tool")
    assert_failed(by_id["b1"], "invalid_arguments")
    assert_failed(by_id["r1"], "invalid_arguments")


async def test_a_model_500_after_retries_shows_each_retry_as_an_event_and_fails_the_call(
    spans: Spans, server: FakeOpenAI, model: OpenAIModel
) -> None:
    spans.instrument(include_content=True)
    echo = {"error": {"message": f"upstream rejected key {KEY} and header {HEADER_SECRET}", "type": "server_error"}}
    server.add(Status(500, echo), Status(500, echo), Status(500, echo))
    with pytest.raises(ModelError) as info:
        await llm.model(model).request("Hello").prompt_async(max_retries=2)
    assert info.value.type == "server" and server.count == 3

    chat = spans.one("chat gpt-4o-mini")
    assert_failed(chat, "server")
    assert "HTTP 500" in (chat.status.description or "")
    assert [event.name for event in chat.events] == ["threadline.retry", "threadline.retry"]
    first, second = chat.events
    assert dict(first.attributes or {})["threadline.retry.attempt"] == 1
    assert dict(second.attributes or {})["threadline.retry.attempt"] == 2
    for event in chat.events:
        assert dict(event.attributes or {})["error.type"] == "server"
        assert dict(event.attributes or {})["http.response.status_code"] == 500
    assert attributes(chat)["server.address"] == "127.0.0.1"
    assert attributes(chat)["server.port"] == server.port
    assert_failed(spans.one("invoke_agent threadline"), "server")
    text = spans.text()
    assert KEY not in text and HEADER_SECRET not in text
    assert KEY[8:] not in text  # not even a part of it


async def test_a_retry_that_succeeds_leaves_one_event_on_a_successful_call(
    spans: Spans, server: FakeOpenAI, model: OpenAIModel
) -> None:
    server.add(Status(503), Answer("Hello there."))
    assert await llm.model(model).request("Hello").prompt_async() == "Hello there."
    chat = spans.one("chat gpt-4o-mini")
    assert chat.status.status_code == StatusCode.UNSET
    assert [dict(event.attributes or {})["http.response.status_code"] for event in chat.events] == [503]
    assert attributes(chat)["gen_ai.usage.input_tokens"] == 11
    assert attributes(chat)["gen_ai.response.finish_reasons"] == ("stop",)


async def test_a_401_fails_the_call_at_once_with_error_type_auth(
    spans: Spans, server: FakeOpenAI, model: OpenAIModel
) -> None:
    spans.instrument(include_content=True)
    server.add(Status(401, {"error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}}))
    with pytest.raises(ModelError):
        await llm.model(model).request("Hello").prompt_async()
    chat = spans.one("chat gpt-4o-mini")
    assert_failed(chat, "auth")
    assert chat.events == () or list(chat.events) == []
    assert KEY not in spans.text() and HEADER_SECRET not in spans.text()


async def test_no_key_reaches_a_span_even_with_content_and_a_tool_argument_named_api_key(
    spans: Spans, server: FakeOpenAI, model: OpenAIModel
) -> None:
    spans.instrument(include_content=True)

    def connect(host: str, api_key: str) -> str:
        """Connect to a service."""
        return f"connected to {host} with key {api_key}"

    arguments = json.dumps({"host": "db.internal", "api_key": "plain-password-in-argument-42"})
    server.add(Answer(tool_calls=(ToolUse("connect", arguments, id="k1"),)), Answer("Connected."))
    conversation = llm.model(model).tools(connect).request(f"Connect; my OpenAI key is {KEY}")
    assert await conversation.prompt_async() == "Connected."
    text = spans.text()
    assert "db.internal" in text  # content is there…
    # …but not the secret-named argument, nor that value where the tool's result or a later request repeats it.
    assert "plain-password-in-argument-42" not in text
    assert "with key ***" in attributes(spans.one("execute_tool connect"))["gen_ai.tool.call.result"]
    assert KEY not in text  # nor anything shaped like a key, even in the user's own words
    assert HEADER_SECRET not in text
    tool = spans.one("execute_tool connect")
    assert json.loads(attributes(tool)["gen_ai.tool.call.arguments"]) == {"host": "db.internal", "api_key": "***"}


async def cancel_when(started: asyncio.Event, conversation: Conversation) -> None:
    """Run the conversation's turn and cancel it once ``started`` is set."""

    async def drive() -> None:
        async for _ in conversation.run():
            pass

    task = asyncio.ensure_future(drive())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancelling_a_turn_ends_its_spans_as_interrupted(spans: Spans) -> None:
    started = asyncio.Event()

    async def slow(request: Any) -> str:
        started.set()
        await asyncio.sleep(30)
        return "never"

    conversation = Conversation(config=ConversationConfig(model=ScriptedModel([slow])))
    conversation.add(UserMessage(content="Take your time"))

    await cancel_when(started, conversation)
    assert_failed(spans.one("chat scripted"), "interrupted")
    assert_failed(spans.one("invoke_agent threadline"), "interrupted")
    assert attributes(spans.one("invoke_agent threadline"))["threadline.turn.stop_reason"] == "interrupted"
    # The log says the same: the failure it recorded has the type the span names.
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    assert failure.error.type == "interrupted"


@pytest.mark.parametrize("content", [False, True])
def test_a_failed_model_call_records_the_logged_error_type(spans: Spans, content: bool) -> None:
    spans.instrument(include_content=content)
    with pytest.raises(ModelError):
        llm.model(ScriptedModel([ModelError("slow down", type="rate_limit", status=429)])).request("Hi").prompt()
    chat = spans.one("chat scripted")
    assert_failed(chat, "rate_limit")
    assert attributes(chat)["http.response.status_code"] == 429
    # The error's text is the server's, which may quote the request: content. Without content, type and status.
    assert chat.status.description == ("slow down" if content else "rate_limit (HTTP 429)")
    turn = spans.one("invoke_agent threadline")
    assert_failed(turn, "rate_limit")
    assert turn.status.description == ("slow down" if content else "rate_limit (HTTP 429)")
    assert attributes(turn)["threadline.turn.stop_reason"] == "error"


PASSWORD = "hunter2-very-secret"


def login(user: str, password: str) -> str:
    """Log in."""
    return f"logged in as {user}"


def quoting(password: str) -> str:
    """A pydantic validation error as vLLM answers a request it refuses: it quotes the message it refused."""
    return (
        "1 validation error: {'type': 'string_type', 'loc': ('body', 'messages', 2, 'content'), 'msg': 'Input "
        "should be a valid string', 'input': {'role': 'assistant', 'tool_calls': [{'function': {'name': 'login', "
        f"""'arguments': '{{"user": "bob", "password": "{password}"}}'}}}}]}}}}"""
    )


@pytest.mark.parametrize("content", [False, True])
async def test_a_server_error_quoting_the_request_is_content_and_masks_its_secrets(
    spans: Spans, server: FakeOpenAI, model: OpenAIModel, content: bool
) -> None:
    spans.instrument(include_content=content)
    arguments = json.dumps({"user": "bob", "password": PASSWORD})
    server.add(
        Answer(tool_calls=(ToolUse("login", arguments, id="k1"),)),
        Status(500, {"error": {"message": f"upstream failed on {quoting(PASSWORD)}", "type": "server_error"}}),
        Status(400, {"error": {"message": quoting(PASSWORD), "type": "BadRequestError"}}),
    )
    with pytest.raises(ModelError) as info:
        await llm.model(model).tools(login).request("Log me in").prompt_async(max_retries=1)
    assert info.value.type == "bad_request" and PASSWORD in str(info.value)  # the server did quote it

    text = spans.text()
    assert PASSWORD not in text
    _, failed = spans.named("chat gpt-4o-mini")
    assert_failed(failed, "bad_request")
    assert attributes(failed)["http.response.status_code"] == 400
    [retry] = failed.events
    assert dict(retry.attributes or {})["http.response.status_code"] == 500
    turn = spans.one("invoke_agent threadline")
    assert_failed(turn, "bad_request")
    if content:
        for description in (failed.status.description or "", turn.status.description or ""):
            assert "rejected the request (HTTP 400)" in description
            assert """"password": "***"}""" in description
        assert """"password": "***"}""" in str(dict(retry.attributes or {})["threadline.retry.message"])
    else:
        assert failed.status.description == "bad_request (HTTP 400)"
        assert turn.status.description == "bad_request (HTTP 400)"
        assert "threadline.retry.message" not in dict(retry.attributes or {})
        assert "validation error" not in text and "upstream failed" not in text


async def test_a_server_error_cut_inside_a_secret_masks_the_part_that_is_left(
    spans: Spans, server: FakeOpenAI, model: OpenAIModel
) -> None:
    spans.instrument(include_content=True)
    arguments = json.dumps({"user": "bob", "password": PASSWORD})
    # The transport keeps 400 characters of a server's text: this one is cut ten characters into the password.
    message = "invalid input: " + "." * (390 - len("invalid input: ")) + PASSWORD + " and more"
    server.add(
        Answer(tool_calls=(ToolUse("login", arguments, id="k1"),)),
        Status(400, {"error": {"message": message, "type": "BadRequestError"}}),
    )
    with pytest.raises(ModelError) as info:
        await llm.model(model).tools(login).request("Log me in").prompt_async()
    assert PASSWORD[:10] + "…" in str(info.value)
    assert PASSWORD[:10] not in spans.text()
    _, failed = spans.named("chat gpt-4o-mini")
    assert (failed.status.description or "").endswith(".***…")


async def test_a_turn_cancelled_during_a_tool_says_it_was_interrupted(spans: Spans) -> None:
    started = asyncio.Event()

    async def slow(seconds: float) -> str:
        """Wait."""
        started.set()
        await asyncio.sleep(seconds)
        return "done"

    model = ScriptedModel([call("slow", seconds=30.0), "Done."])
    conversation = Conversation(config=ConversationConfig(model=model, tools=[slow]))
    conversation.add(UserMessage(content="Wait"))

    await cancel_when(started, conversation)
    turn = spans.one("invoke_agent threadline")
    assert_failed(turn, "interrupted")
    assert attributes(turn)["threadline.turn.stop_reason"] == "interrupted"
    assert_failed(spans.one("execute_tool slow"), "interrupted")


async def test_a_turn_its_caller_leaves_before_the_answer_says_it_was_interrupted(spans: Spans) -> None:
    model = ScriptedModel([call("get_time"), "Noon."])

    def get_time() -> str:
        """The time."""
        return "noon"

    conversation = Conversation(config=ConversationConfig(model=model, tools=[get_time]))
    conversation.add(UserMessage(content="Time?"))
    steps = conversation.run()
    async for message in steps:
        assert isinstance(message, AssistantMessage) and message.tool_calls
        break  # the caller stops reading with the call unanswered
    await steps.aclose()
    turn = spans.one("invoke_agent threadline")
    assert turn.status.status_code == StatusCode.UNSET  # leaving is no error
    assert attributes(turn)["threadline.turn.stop_reason"] == "interrupted"


async def test_a_turn_its_caller_leaves_after_the_answer_ended(spans: Spans) -> None:
    conversation = Conversation(config=ConversationConfig(model=ScriptedModel(["Noon."])))
    conversation.add(UserMessage(content="Time?"))
    steps = conversation.run()
    async for message in steps:
        assert isinstance(message, AssistantMessage) and message.content == "Noon."
        break  # the answer was the turn's last message
    await steps.aclose()
    turn = spans.one("invoke_agent threadline")
    assert turn.status.status_code == StatusCode.UNSET
    assert attributes(turn)["threadline.turn.stop_reason"] == "end"


async def test_a_store_failure_while_logging_a_failed_call_still_closes_its_spans(spans: Spans) -> None:
    from tests.core.test_engine_host import ListHost
    from threadline import StoreError
    from threadline.engine import TurnOptions, TurnResult, run_turn

    class HostWithAFullDisk(ListHost):
        def record(self, message: Any) -> None:
            if isinstance(message, AssistantMessage) and message.error is not None:
                raise StoreError("disk full")
            super().record(message)

    model = ScriptedModel([ModelError("overloaded", type="overloaded", status=529)])
    host = HostWithAFullDisk([UserMessage(content="Hi")], model, [])
    with pytest.raises(StoreError):
        async for _ in run_turn(host, TurnOptions(), TurnResult()):
            pass
    assert_failed(spans.one("chat scripted"), "overloaded")
    assert_failed(spans.one("invoke_agent threadline"), "StoreError")
    assert trace.get_current_span() is trace.INVALID_SPAN  # the model call's span did not stay current
