"""What a model returns is checked at the engine's edge (issue 8, item 7): a custom `Model` that emits tool calls with
``arguments=None``, a list, ``name=None``, a non-string id, or content that is not text never produces a stored log
that fails to load. Arguments that are not a JSON object become an error result the model can correct; what cannot
be repaired is a logged `ModelError` of type ``invalid_response``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from threadline import (
    AssistantMessage,
    Conversation,
    ConversationConfig,
    ModelError,
    ModelRequest,
    ModelResponse,
    TextDelta,
    ToolCall,
    ToolMessage,
    Usage,
    user,
)
from threadline.models.base import Model, ModelCapabilities, ModelEvent
from threadline.store import Store, open_store


class Careless(Model):
    """A custom model written without much care: it yields whatever it was given, event by event."""

    name = "careless"
    capabilities = ModelCapabilities(tools=True, streaming=True, structured_output=True, images=True)

    def __init__(self, *answers: list[Any]) -> None:
        self.answers = list(answers)
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        for event in self.answers.pop(0):
            yield event


def bad_call(**fields: Any) -> ToolCall:
    """A ToolCall with fields of any type (msgspec structs do not check types when made in Python); its arguments
    are set after it is made, as a careless model may do."""
    values = {"id": "c1", "name": "echo", "arguments": {}, **fields}
    call = ToolCall(id=values["id"], name=values["name"])
    call.arguments = values["arguments"]
    return call


def nested(depth: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    inner = top
    for _ in range(depth - 1):
        inner["a"] = {}
        inner = inner["a"]
    return top


DEEP_200 = nested(200)
DEEP_3000 = nested(3_000)


def echo(text: str = "nothing") -> str:
    """Echo the text."""
    return text


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with open_store(f"sqlite:///{tmp_path / 'log.db'}") as opened:
        yield opened


def turn(store: Store, model: Model) -> Conversation:
    conversation = Conversation(store=store, config=ConversationConfig(model=model, tools=[echo]))
    conversation.add(user("go"))
    return conversation


def assert_loads_and_validates(conversation: Conversation, store: Store) -> None:
    reloaded = Conversation.load(conversation.id, store)  # what failed forever before
    reloaded.messages.validate()
    assert reloaded.messages == conversation.messages


def done() -> list[Any]:
    return [TextDelta("fixed"), ModelResponse(content="fixed")]


@pytest.mark.parametrize(
    ("arguments", "raw"),
    [
        ([1, 2], "[1,2]"),
        ("text", '"text"'),
        (42, "42"),
        ({1: "a"}, None),  # keys that are not strings
        ({"text": object()}, None),  # a value JSON cannot hold
        # Values JSON writes as something else (issue 31): kept, the log in memory was not the log stored.
        ({"text": (1, 2)}, '{"text":[1,2]}'),
        ({"text": b"hi"}, None),
        # Nested deeper than the log keeps, set after the call was made (a call made so deep is refused at once):
        # 3,000 levels failed the model call with RecursionError; 200 were stored and then failed every load.
        (DEEP_200, None),
        (DEEP_3000, None),
    ],
    ids=["list", "string", "number", "non-string-keys", "not-json", "tuple", "bytes", "deep-200", "deep-3000"],
)
async def test_arguments_that_are_not_a_json_object_become_an_error_the_model_can_correct(
    store: Store, arguments: Any, raw: str | None
) -> None:
    model = Careless([ModelResponse(content=None, tool_calls=[bad_call(arguments=arguments)])], done())
    conversation = turn(store, model)
    new = [m async for m in conversation]
    call_message, result, answer = new
    assert isinstance(call_message, AssistantMessage)
    logged = call_message.tool_calls[0]
    assert logged.arguments == {} and logged.raw_arguments is not None
    if raw is not None:
        assert logged.raw_arguments == raw
    assert isinstance(result, ToolMessage) and result.is_error and "Invalid arguments" in result.content
    assert isinstance(answer, AssistantMessage) and answer.content == "fixed"
    assert model.requests[1].messages[-1].content == result.content  # the model was told, and answered
    assert_loads_and_validates(conversation, store)


async def test_arguments_none_means_no_arguments(store: Store) -> None:
    model = Careless([ModelResponse(content=None, tool_calls=[bad_call(arguments=None)])], done())
    conversation = turn(store, model)
    new = [m async for m in conversation]
    assert isinstance(new[1], ToolMessage) and new[1].content == "nothing" and not new[1].is_error
    assert_loads_and_validates(conversation, store)


@pytest.mark.parametrize(
    ("events", "problem"),
    [
        ([ModelResponse(content=None, tool_calls=[bad_call(name=None)])], "without a tool name"),
        ([ModelResponse(content=None, tool_calls=[bad_call(name="")])], "without a tool name"),
        ([ModelResponse(content=None, tool_calls=[bad_call(id=7)])], "id that is a int"),
        ([ModelResponse(content=None, tool_calls=[bad_call(id=None)])], "id that is a NoneType"),
        ([ModelResponse(content=["a", "b"])], "content that is a list"),
        ([ModelResponse(content=3.5)], "content that is a float"),
        ([ModelResponse(content=None, tool_calls=[{"id": "c", "name": "echo"}])], "as a dict, not a ToolCall"),
        ([ModelResponse(content=None, tool_calls="echo")], "tool_calls that is a str"),
        ([TextDelta(b"bytes"), ModelResponse(content="x")], "text piece that is a bytes"),
        (["just a string"], "streamed a str"),
    ],
    ids=[
        "name-none",
        "name-empty",
        "id-int",
        "id-none",
        "content-list",
        "content-float",
        "call-as-dict",
        "calls-not-a-list",
        "delta-bytes",
        "not-an-event",
    ],
)
async def test_what_cannot_be_repaired_is_a_logged_model_error(store: Store, events: list[Any], problem: str) -> None:
    model = Careless([TextDelta("Partial "), *events])
    conversation = turn(store, model)
    with pytest.raises(ModelError, match=problem) as info:
        async for _ in conversation:
            pass
    assert info.value.type == "invalid_response"
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    assert failure.error.type == "invalid_response" and problem in failure.error.message
    assert failure.content is not None and failure.content.startswith("Partial ")
    assert failure.tool_calls == []
    assert_loads_and_validates(conversation, store)
    # The conversation goes on: the failure is sent back as text ending in an error block.
    conversation.config.model = Careless(done())
    assert await conversation.continuation.prompt_async() == "fixed"
    assert_loads_and_validates(conversation, store)


async def test_a_tuple_of_calls_a_usage_and_a_model_name_of_the_wrong_type_are_tidied(store: Store) -> None:
    response = ModelResponse(
        content=None,
        tool_calls=(bad_call(arguments={"text": "hi"}),),  # type: ignore[arg-type]
        usage={"input_tokens": 3},  # type: ignore[arg-type]
        model=12,  # type: ignore[arg-type]
    )
    model = Careless([response], [ModelResponse(content="ok", usage=Usage(input_tokens=1, output_tokens="2"))])  # type: ignore[arg-type]
    conversation = turn(store, model)
    new = [m async for m in conversation]
    call_message, result, answer = new
    assert isinstance(call_message, AssistantMessage)
    assert call_message.usage is None and call_message.model == "careless"
    assert isinstance(result, ToolMessage) and result.content == "hi"
    assert isinstance(answer, AssistantMessage) and answer.usage is None
    assert_loads_and_validates(conversation, store)


@pytest.mark.parametrize(
    "usage",
    [Usage(input_tokens=-1), Usage(output_tokens=2**63), Usage(reasoning_tokens=True), Usage(reasoning_tokens="2")],  # type: ignore[arg-type]
    ids=["below-zero", "past-64-bits", "bool", "text"],
)
async def test_a_usage_whose_counts_are_not_counts_is_dropped(store: Store, usage: Usage) -> None:
    model = Careless([TextDelta("fine"), ModelResponse(content="fine", usage=usage)])
    conversation = turn(store, model)
    new = [m async for m in conversation]
    (answer,) = new
    assert isinstance(answer, AssistantMessage) and answer.content == "fine" and answer.usage is None
    assert_loads_and_validates(conversation, store)
