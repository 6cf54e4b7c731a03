"""Tool calls and structured output on the real embedded model: grammar-constrained, so they always parse.

Each test asserts the log a user would inspect: the assistant's tool call names the real tool with valid arguments,
the tool result is the tool's real output, and the turn ends with an answer. What the model chooses where it may
choose (a second round, a call in "auto" mode, the words and the length of an answer) differs from one CPU's build of
llama.cpp to the next, so it is checked for what threadline guarantees either way (`tests.real_models`).
"""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from tests.local.conftest import Units, converted
from tests.real_models import assert_tool_turn
from threadline import (
    AssistantMessage,
    Conversation,
    MessageList,
    ModelError,
    ToolCall,
    ToolMessage,
    Toolset,
    UserError,
    llm,
    user,
)
from threadline.models.base import ModelRequest, ModelResponse, ModelSettings, ResponseFormat, TextDelta, ToolSpec
from threadline.models.local import LocalModel
from threadline.tools import resolve_tools

TOOL = "Units.celsius_to_fahrenheit"
UNITS = {TOOL: converted}
# Bounds each answer's time; an answer cut there says so ("length"), which `assert_tool_turn` allows.
MAX_TOKENS = 48


def fahrenheit_to_celsius(fahrenheit: float) -> str:
    """Convert a temperature from degrees Fahrenheit to degrees Celsius."""
    return f"{fahrenheit:g} °F = {(fahrenheit - 32) * 5 / 9:.1f} °C"


class City(BaseModel):
    name: str
    country: str


class Cities(BaseModel):
    cities: list[City]


async def run(conversation: Conversation) -> list[object]:
    return [message async for message in conversation]


async def test_forced_tool_call_runs_the_tool_then_answers(local: LocalModel) -> None:
    units = Units()
    conversation = (
        llm.model(local)
        .tools(Toolset.from_object(units))
        .tool_choice("required")
        .max_tool_rounds(2)
        .request("What is 37 degrees Celsius in Fahrenheit?")
        .prompt_conversation(temperature=0, max_tokens=MAX_TOKENS)
    )
    new = await run(conversation)
    assert conversation.last_turn is not None
    assert_tool_turn(
        new,  # type: ignore[arg-type]
        tools=UNITS,
        max_rounds=2,
        stop_reason=conversation.last_turn.stop_reason,
        forced="required",
        max_tokens=MAX_TOKENS,
    )

    call_message, result = new[0], new[1]
    assert isinstance(call_message, AssistantMessage)
    assert len(call_message.tool_calls) == 1
    call = call_message.tool_calls[0]
    assert call.name == TOOL
    assert call.raw_arguments is None  # the grammar keeps a whole call to the schema
    assert set(call.arguments) == {"celsius"}
    assert isinstance(call.arguments["celsius"], (int, float))
    assert call.id.startswith("call_")
    assert isinstance(result, ToolMessage) and not result.is_error
    # The object's method ran once per call, with the arguments the model wrote, whether or not it used round two.
    calls = [c for m in new if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert units.calls == [c.arguments["celsius"] for c in calls]
    conversation.messages.validate()


async def test_tool_choice_by_name_forces_that_tool(local: LocalModel) -> None:
    conversation = (
        llm.model(local)
        .tools(Toolset.from_object(Units()), fahrenheit_to_celsius)
        .tool_choice("fahrenheit_to_celsius")
        .max_tool_rounds(1)
        .request("Convert 212 degrees Fahrenheit to Celsius.")
        .prompt_conversation(temperature=0, max_tokens=MAX_TOKENS)
    )
    new = await run(conversation)
    assert conversation.last_turn is not None
    rounds = assert_tool_turn(
        new,  # type: ignore[arg-type]
        tools={**UNITS, "fahrenheit_to_celsius": fahrenheit_to_celsius},
        max_rounds=1,
        stop_reason=conversation.last_turn.stop_reason,
        forced="fahrenheit_to_celsius",
        max_tokens=MAX_TOKENS,
    )
    first = new[0]
    assert rounds == 1 and isinstance(first, AssistantMessage)
    assert [call.name for call in first.tool_calls] == ["fahrenheit_to_celsius"]
    assert isinstance(first.tool_calls[0].arguments["fahrenheit"], (int, float))
    conversation.messages.validate()


async def test_tool_call_ids_are_unique_across_the_log(local: LocalModel) -> None:
    conversation = (
        llm.model(local)
        .tools(Toolset.from_object(Units()))
        .tool_choice("required")
        .max_tool_rounds(1)
        .request("What is 20 degrees Celsius in Fahrenheit?")
        .prompt_conversation(temperature=0, max_tokens=MAX_TOKENS)
    )
    await run(conversation)
    conversation.continuation.tool_choice("required").request("And 30 degrees?").prompt_conversation(
        temperature=0, max_tokens=MAX_TOKENS
    )
    await run(conversation)
    ids = [call.id for m in conversation.messages if isinstance(m, AssistantMessage) for call in m.tool_calls]
    assert len(ids) == 2 and len(set(ids)) == 2
    conversation.messages.validate()


def _one_call_at_a_time(values: list[int]) -> list[object]:
    """A log in which the model converted some values one call at a time; the model goes on with the next."""
    messages: list[object] = [
        user("Convert 10, 20 and 30 degrees Celsius to Fahrenheit, one tool call at a time."),
    ]
    for index, value in enumerate(values):
        call = ToolCall(id=f"call_example_{index}", name=TOOL, arguments={"celsius": value})
        messages.append(AssistantMessage(tool_calls=[call]))
        messages.append(ToolMessage(tool_call_id=call.id, tool_name=TOOL, content=converted(value)))
    return messages


@pytest.mark.parametrize(
    "log",
    [
        pytest.param([user("What is the capital of France?")], id="a question no tool answers"),
        pytest.param(_one_call_at_a_time([10, 20]), id="a log that converts one value at a time"),
    ],
)
async def test_auto_tool_choice_answers_in_text_or_parses_a_call_the_model_starts_by_itself(
    local: LocalModel, log: list[object]
) -> None:
    """In "auto" the model writes text and may open ``<tool_call>`` at any point; which it does is its choice (and
    differs between CPUs). Either way a marker it writes while tools are offered opens a call (never stays in the
    text), a call it starts is held to the grammar and names the real tool with the schema's arguments, and the
    tool runs with exactly those."""
    units = Units()
    conversation = Conversation(messages=MessageList(log))  # type: ignore[arg-type]
    conversation.continuation.model(local).tools(Toolset.from_object(units)).max_tool_rounds(1).prompt_conversation(
        temperature=0, max_tokens=MAX_TOKENS
    )
    new = await run(conversation)
    assert conversation.last_turn is not None
    rounds = assert_tool_turn(
        new,  # type: ignore[arg-type]
        tools=UNITS,
        max_rounds=1,
        stop_reason=conversation.last_turn.stop_reason,
        max_tokens=MAX_TOKENS,
    )
    for message in new:
        # Where tools were offered, a marker the model writes opens a call: it never stays in the text. (After the
        # last round none are offered, and a model that imitates the log's calls writes the markup as plain text.)
        offered = message is not new[-1] or rounds < 1
        if isinstance(message, AssistantMessage) and offered:
            assert "<tool_call>" not in (message.content or ""), message.content
    calls = [call for m in new if isinstance(m, AssistantMessage) for call in m.tool_calls]
    assert len(calls) == rounds  # one call per round: the grammar closes the turn after it
    for call in calls:
        if call.raw_arguments is None:  # whole (not cut at the token limit): the schema's one number
            assert set(call.arguments) == {"celsius"} and isinstance(call.arguments["celsius"], (int, float))
    assert units.calls == [call.arguments["celsius"] for call in calls if call.raw_arguments is None]
    conversation.messages.validate()


def test_prompt_for_type_returns_a_validated_instance(local: LocalModel) -> None:
    city = llm.model(local).request("Give me data about Paris.").prompt_for_type(City, temperature=0, retries=0)
    assert isinstance(city, City)  # validated: both fields, strings (what they say is the model's)


def test_prompt_for_type_with_a_list_and_nested_models(local: LocalModel) -> None:
    result = llm.model(local).request("List two big cities in France.").prompt_for_type(Cities, temperature=0)
    assert isinstance(result, Cities)
    assert all(isinstance(city, City) for city in result.cities)


def test_prompt_for_type_of_a_non_object_type(local: LocalModel) -> None:
    number = llm.model(local).request("How many legs does a cat have?").prompt_for_type(int, temperature=0)
    assert isinstance(number, int)


def test_prompt_for_type_with_tools_offered_still_validates(local: LocalModel) -> None:
    city = (
        llm.model(local)
        .tools(Toolset.from_object(Units()))
        .max_tool_rounds(1)
        .request("Give me data about Rome.")
        .prompt_for_type(City, temperature=0, retries=0)
    )
    assert isinstance(city, City)


async def test_structured_output_streams_json_text(local: LocalModel) -> None:
    schema = City.model_json_schema()
    request = ModelRequest(
        messages=[user("Give me data about Berlin.")],
        settings=ModelSettings(temperature=0),
        response_format=ResponseFormat(name="City", schema=schema),
    )
    deltas: list[str] = []
    final = None
    async for event in local.stream(request):
        if isinstance(event, TextDelta):
            deltas.append(event.text)
        else:
            final = event
    assert final is not None and final.content is not None
    assert "".join(deltas) == final.content
    assert City.model_validate(json.loads(final.content))


class Item(BaseModel):
    label: str


class Box(BaseModel):
    width: int


def _spec_with_def(name: str, description: str, definition: type[BaseModel]) -> ToolSpec:
    """A tool whose schema keeps its argument type under ``$defs/Item``, whatever that type is."""
    return ToolSpec(
        name,
        description,
        {
            "$defs": {"Item": definition.model_json_schema()},
            "type": "object",
            "properties": {"item": {"$ref": "#/$defs/Item"}},
            "required": ["item"],
        },
    )


async def test_grammars_keep_tools_apart_when_their_schemas_share_definition_names(local: LocalModel) -> None:
    request = ModelRequest(
        messages=[user("Pack a box 3 wide.")],
        tools=[_spec_with_def("Shop.ship", "Ship an item.", Item), _spec_with_def("Store.pack", "Pack a box.", Box)],
        tool_choice="Store.pack",
        settings=ModelSettings(temperature=0),
    )
    final = [event async for event in local.stream(request)][-1]
    assert isinstance(final, ModelResponse)
    call = final.tool_calls[0]
    assert call.name == "Store.pack"
    assert set(call.arguments["item"]) == {"width"}  # Store's "Item", not Shop's
    assert isinstance(call.arguments["item"]["width"], int)


def test_tool_choice_naming_a_tool_that_is_not_offered_is_refused(local: LocalModel) -> None:
    builder = llm.model(local).tools(Toolset.from_object(Units())).tool_choice("launch_rocket").request("Go.")
    with pytest.raises(UserError, match="tool_choice names 'launch_rocket', which is not offered"):
        builder.prompt()


def _cut_request(max_tokens: int) -> ModelRequest:
    """A forced call of the unit converter, limited to ``max_tokens``; the same prompt at every limit, so llama.cpp
    keeps it cached from one try to the next."""
    return ModelRequest(
        messages=[user("What is 37 degrees Celsius in Fahrenheit?")],
        tools=resolve_tools([Toolset.from_object(Units())]).specs(),
        tool_choice="required",
        settings=ModelSettings(temperature=0, max_tokens=max_tokens),
    )


async def _cut_outcome(local: LocalModel, max_tokens: int) -> str:
    """Where a forced call stops at ``max_tokens``, checked for what the model reports of it: ``"before the name"``
    (a clear length failure), ``"in the arguments"`` (the call with its text, nothing guessed) or ``"whole"``."""
    try:
        final = [event async for event in local.stream(_cut_request(max_tokens))][-1]
    except ModelError as exc:
        assert exc.type == "length" and "cut off before naming a tool" in str(exc), exc
        return "before the name"
    assert isinstance(final, ModelResponse) and len(final.tool_calls) == 1
    call = final.tool_calls[0]
    assert call.name == TOOL
    if call.raw_arguments is not None:
        assert call.arguments == {} and final.stop_reason == "length"
        return "in the arguments"
    assert set(call.arguments) == {"celsius"} and isinstance(call.arguments["celsius"], (int, float))
    return "whole"


async def test_tool_call_cut_off_by_max_tokens_is_reported_to_the_model(local: LocalModel) -> None:
    """A forced call cut at the token limit: before its tool's name is whole, the call fails clearly (next test);
    after it, inside the arguments, the call keeps its text and nothing is guessed (the turn then answers it with an
    error the model reads and never runs the tool: `tests.providers.test_stop_reasons`). Where one cut ends and the
    other begins depends on the tokens the model picks (the grammar lets it pad with whitespace, and the words
    differ between CPUs), so the limit grows one token at a time until the call is whole: every cut on the way is
    reported right, and both kinds occur."""
    seen: list[str] = []
    for max_tokens in range(1, 400):
        seen.append(await _cut_outcome(local, max_tokens))
        if seen[-1] == "whole":
            break
    assert seen[0] == "before the name" and seen[-1] == "whole", seen
    assert "in the arguments" in seen, seen


async def test_tool_call_cut_off_before_its_name_fails_clearly(local: LocalModel) -> None:
    conversation = (
        llm.model(local)
        .tools(Toolset.from_object(Units()))
        .tool_choice("required")
        .request("What is 37 degrees Celsius in Fahrenheit?")
        .prompt_conversation(temperature=0, max_tokens=1)  # no token holds '{"name": "Units.celsius_to_fahrenheit"'
    )
    with pytest.raises(ModelError, match="cut off before naming a tool") as caught:
        await run(conversation)
    assert caught.value.type == "length"
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None and failure.error.type == "length"
    conversation.messages.validate()
