"""request_hash: equal inputs give equal hashes in another process (another hash seed), and every input that
changes the request changes the hash; ids, timestamps and transport settings do not."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from threadline import AssistantMessage, ToolCall, ToolMessage, request_hash, tool, user
from threadline.testing import ScriptedModel


def get_weather(city: str) -> str:
    """Current weather in a city."""
    return city


def get_weather_in_units(city: int) -> str:
    """Current weather in a city."""
    return str(city)


def log() -> list[Any]:
    """A log with a tool exchange; every call makes new ids and timestamps."""
    return [
        user("Weather in Paris?"),
        AssistantMessage(tool_calls=[ToolCall(id="c1", name="get_weather", arguments={"city": "Paris", "days": 2})]),
        ToolMessage(tool_call_id="c1", tool_name="get_weather", content="22 C"),
        AssistantMessage(content="Sunny."),
        user("And tomorrow?"),
    ]


BASE: dict[str, Any] = {
    "model": "openai:gpt-4o-mini",
    "system": "Be terse.",
    "documents": {"profile": "Lives in Paris."},
    "temperature": 0.2,
    "max_tokens": 100,
}

CHILD = """
from threadline import AssistantMessage, ToolCall, ToolMessage, request_hash, user
def get_weather(city: str) -> str:
    \"\"\"Current weather in a city.\"\"\"
    return city
messages = [
    user("Weather in Paris?"),
    AssistantMessage(tool_calls=[ToolCall(id="c1", name="get_weather", arguments={"days": 2, "city": "Paris"})]),
    ToolMessage(tool_call_id="c1", tool_name="get_weather", content="22 C"),
    AssistantMessage(content="Sunny."),
    user("And tomorrow?"),
]
print(request_hash(model="openai:gpt-4o-mini", system="Be terse.", documents={"profile": "Lives in Paris."},
                   temperature=0.2, max_tokens=100, messages=messages, tools=[get_weather]))
"""


def test_equal_inputs_hash_equally_in_another_process() -> None:
    here = request_hash(**BASE, messages=log(), tools=[get_weather])
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, env=env, timeout=120
    )
    assert out.stdout.strip() == here
    assert len(here) == 64 and int(here, 16) >= 0


def test_ids_timestamps_and_transport_settings_do_not_change_the_hash() -> None:
    first = request_hash(**BASE, messages=log(), tools=[get_weather])
    again = request_hash(**BASE, messages=log(), tools=[get_weather], stream=False, timeout=5, max_retries=1)
    assert first == again


def changed(**overrides: Any) -> dict[str, Any]:
    return {**BASE, "messages": log(), "tools": [get_weather], **overrides}


def other_answer() -> list[Any]:
    items = log()
    items[3] = AssistantMessage(content="Rainy.")
    return items


def other_arguments() -> list[Any]:
    items = log()
    items[1] = AssistantMessage(
        tool_calls=[ToolCall(id="c1", name="get_weather", arguments={"city": "Lyon", "days": 2})]
    )
    return items


def other_result() -> list[Any]:
    items = log()
    items[2] = ToolMessage(tool_call_id="c1", tool_name="get_weather", content="22 C", is_error=True)
    return items


@pytest.mark.parametrize(
    "variant",
    [
        pytest.param(changed(model="openai:gpt-4o"), id="model"),
        pytest.param(changed(model=ScriptedModel(name="other")), id="model-object"),
        pytest.param(changed(system="Be verbose."), id="system"),
        pytest.param(changed(system=None), id="no-system"),
        pytest.param(changed(documents={"profile": "Lives in Rome."}), id="documents-text"),
        pytest.param(changed(documents={"home": "Lives in Paris."}), id="documents-name"),
        pytest.param(changed(temperature=0.3), id="temperature"),
        pytest.param(changed(max_tokens=101), id="max-tokens"),
        pytest.param(changed(openai_seed=7), id="extras"),
        pytest.param(changed(tool_choice="required"), id="tool-choice"),
        pytest.param(changed(max_tool_rounds=3), id="max-tool-rounds"),
        pytest.param(changed(messages=[*log(), user("More?")]), id="one-more-message"),
        pytest.param(changed(messages=other_answer()), id="assistant-content"),
        pytest.param(changed(messages=other_arguments()), id="tool-arguments"),
        pytest.param(changed(messages=other_result()), id="tool-result-error"),
        pytest.param(changed(tools=[]), id="no-tools"),
        pytest.param(changed(tools=[tool(get_weather, name="weather")]), id="tool-name"),
        pytest.param(changed(tools=[tool(get_weather, description="Weather.")]), id="tool-description"),
        pytest.param(changed(tools=[tool(get_weather_in_units, name="get_weather")]), id="tool-schema"),
    ],
)
def test_every_input_that_shapes_the_request_changes_the_hash(variant: dict[str, Any]) -> None:
    assert request_hash(**variant) != request_hash(**changed())


def test_prompt_is_the_same_request_as_a_final_user_message() -> None:
    assert request_hash(model="m", prompt="Hi") == request_hash(model="m", messages=[user("Hi")])
    assert request_hash(model="m", prompt="Hi") != request_hash(model="m", prompt="Hi!")
