"""Tool calls and structured output on the real embedded model: grammar-constrained, so they always parse.

Each test asserts the log a user would inspect: the assistant's tool call names the real tool with valid arguments,
the tool result is the tool's real output, and the turn ends with an answer.
"""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from tests.local.conftest import Units, converted
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

TOOL = "Units.celsius_to_fahrenheit"


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
        .prompt_conversation(temperature=0)
    )
    new = await run(conversation)

    call_message, result, answer = new[0], new[1], new[-1]
    assert isinstance(call_message, AssistantMessage)
    assert len(call_message.tool_calls) == 1
    call = call_message.tool_calls[0]
    assert call.name == TOOL
    assert call.raw_arguments is None
    assert set(call.arguments) == {"celsius"}
    assert isinstance(call.arguments["celsius"], (int, float))
    assert call.id.startswith("call_")

    assert isinstance(result, ToolMessage)
    assert result.tool_call_id == call.id and result.tool_name == TOOL
    assert not result.is_error
    assert units.calls == [call.arguments["celsius"]]
    assert result.content == converted(call.arguments["celsius"])

    assert isinstance(answer, AssistantMessage)
    assert not answer.tool_calls and answer.content
    assert conversation.last_turn is not None and conversation.last_turn.stop_reason == "end"
    conversation.messages.validate()


async def test_tool_choice_by_name_forces_that_tool(local: LocalModel) -> None:
    conversation = (
        llm.model(local)
        .tools(Toolset.from_object(Units()), fahrenheit_to_celsius)
        .tool_choice("fahrenheit_to_celsius")
        .max_tool_rounds(1)
        .request("Convert 212 degrees Fahrenheit to Celsius.")
        .prompt_conversation(temperature=0)
    )
    new = await run(conversation)
    first = new[0]
    assert isinstance(first, AssistantMessage)
    assert [call.name for call in first.tool_calls] == ["fahrenheit_to_celsius"]
    value = first.tool_calls[0].arguments["fahrenheit"]
    result = new[1]
    assert isinstance(result, ToolMessage) and result.content == fahrenheit_to_celsius(value)
    conversation.messages.validate()


async def test_tool_call_ids_are_unique_across_the_log(local: LocalModel) -> None:
    conversation = (
        llm.model(local)
        .tools(Toolset.from_object(Units()))
        .tool_choice("required")
        .max_tool_rounds(1)
        .request("What is 20 degrees Celsius in Fahrenheit?")
        .prompt_conversation(temperature=0)
    )
    await run(conversation)
    conversation.continuation.tool_choice("required").request("And 30 degrees?").prompt_conversation(temperature=0)
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


async def test_auto_tool_choice_parses_a_call_the_model_starts_by_itself(local: LocalModel) -> None:
    units = Units()
    conversation = Conversation(messages=MessageList(_one_call_at_a_time([10, 20])))  # type: ignore[arg-type]
    conversation.continuation.model(local).tools(Toolset.from_object(units)).max_tool_rounds(1).prompt_conversation(
        temperature=0
    )
    new = await run(conversation)
    first = new[0]
    assert isinstance(first, AssistantMessage)
    assert first.content is None  # nothing before the call
    assert [call.name for call in first.tool_calls] == [TOOL]
    value = first.tool_calls[0].arguments["celsius"]
    assert isinstance(value, (int, float))
    result = new[1]
    assert isinstance(result, ToolMessage) and result.content == converted(value)
    assert units.calls == [value]
    last = new[-1]
    assert isinstance(last, AssistantMessage) and not last.tool_calls  # the round limit forced an answer
    conversation.messages.validate()


async def test_auto_tool_choice_answers_in_text_when_no_tool_is_needed(local: LocalModel) -> None:
    units = Units()
    conversation = (
        llm.model(local)
        .tools(Toolset.from_object(units))
        .request("What is the capital of France?")
        .prompt_conversation(temperature=0, max_tokens=48)
    )
    new = await run(conversation)
    assert len(new) == 1
    answer = new[0]
    assert isinstance(answer, AssistantMessage)
    assert not answer.tool_calls and answer.content and "Paris" in answer.content
    assert units.calls == []


def test_prompt_for_type_returns_a_validated_instance(local: LocalModel) -> None:
    city = llm.model(local).request("Give me data about Paris.").prompt_for_type(City, temperature=0, retries=0)
    assert isinstance(city, City)
    assert city.name


def test_prompt_for_type_with_a_list_and_nested_models(local: LocalModel) -> None:
    result = llm.model(local).request("List two big cities in France.").prompt_for_type(Cities, temperature=0)
    assert isinstance(result, Cities)
    assert result.cities and all(isinstance(city, City) for city in result.cities)


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


async def test_tool_call_cut_off_by_max_tokens_is_reported_to_the_model(local: LocalModel) -> None:
    units = Units()
    conversation = (
        llm.model(local)
        .tools(Toolset.from_object(units))
        .tool_choice("required")
        .max_tool_rounds(1)
        .request("What is 37 degrees Celsius in Fahrenheit?")
        .prompt_conversation(temperature=0, max_tokens=20)  # enough for the name, not for the arguments
    )
    new = await run(conversation)
    first = new[0]
    assert isinstance(first, AssistantMessage)
    call = first.tool_calls[0]
    assert call.name == TOOL
    assert call.arguments == {} and call.raw_arguments is not None
    result = new[1]
    assert isinstance(result, ToolMessage) and result.is_error
    assert "not valid JSON" in result.content
    assert units.calls == []  # never called with arguments it could not have meant
    conversation.messages.validate()


async def test_tool_call_cut_off_before_its_name_fails_clearly(local: LocalModel) -> None:
    conversation = (
        llm.model(local)
        .tools(Toolset.from_object(Units()))
        .tool_choice("required")
        .request("What is 37 degrees Celsius in Fahrenheit?")
        .prompt_conversation(temperature=0, max_tokens=3)
    )
    with pytest.raises(ModelError, match="cut off before naming a tool") as caught:
        await run(conversation)
    assert caught.value.type == "length"
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None and failure.error.type == "length"
    conversation.messages.validate()
