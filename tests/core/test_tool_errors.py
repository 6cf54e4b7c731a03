"""Every way a tool call can go wrong becomes an error result the model sees, and the loop goes on
(docs/failure-rules.md#tool-failures).

Each scenario runs a real turn with `ScriptedModel`: the model asks for a bad call, gets the error result in its
next request, and answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from typing import Any

import pydantic
import pytest

from threadline import Conversation, ToolMessage, llm, tool
from threadline.testing import ScriptedModel

from ._support import call, calls

CALLED: list[dict[str, Any]] = []


def get_weather(city: str, days: int = 1) -> str:
    """Weather for a city.

    Args:
        city: The city.
        days: Days of forecast.
    """
    CALLED.append({"city": city, "days": days})
    return f"Sunny in {city} for {days} day(s)"


def run_bad_call(
    bad: Any, *tools: Any, answer: Any = "Sorry about that.", **settings: Any
) -> tuple[ToolMessage, ScriptedModel, Conversation]:
    """One turn: the model makes ``bad``, then answers. Returns the error result, the model and the conversation."""
    CALLED.clear()
    model = ScriptedModel([calls(bad), answer])
    conversation = (
        llm.model(model).tools(*(tools or (get_weather,))).request("Weather?").prompt_conversation(**settings)
    )

    async def drive() -> None:
        async for _ in conversation:
            pass

    asyncio.run(drive())
    result = conversation.messages[-2]
    assert isinstance(result, ToolMessage)
    assert result.tool_call_id == bad.id
    assert result.tool_name == bad.name
    # The loop went on: the model got the error result in its next request and its answer ended the turn.
    assert len(model.requests) == 2
    sent = model.requests[1].messages[-1]
    assert isinstance(sent, ToolMessage) and sent.content == result.content and sent.is_error == result.is_error
    assert conversation.text == "Sorry about that."
    assert conversation.last_turn is not None and conversation.last_turn.stop_reason == "end"
    conversation.messages.validate()
    return result, model, conversation


def test_invalid_json_arguments() -> None:
    result, _, _ = run_bad_call(call("get_weather", raw='{"city": "Par'))
    assert result.is_error
    assert "Invalid arguments for tool 'get_weather'" in result.content
    assert "not valid JSON" in result.content
    assert '{"city": "Par' in result.content
    assert CALLED == []


def test_missing_field() -> None:
    result, _, _ = run_bad_call(call("get_weather", {"days": 2}))
    assert result.is_error
    assert "Invalid arguments for tool 'get_weather'" in result.content
    assert "city: Field required" in result.content
    assert CALLED == []


def test_extra_field() -> None:
    result, _, _ = run_bad_call(call("get_weather", {"city": "Paris", "color": "red"}))
    assert result.is_error
    assert "color: Extra inputs are not permitted" in result.content
    assert CALLED == []


def test_wrong_typed_field() -> None:
    result, _, _ = run_bad_call(call("get_weather", {"city": "Paris", "days": "many"}))
    assert result.is_error
    assert "days:" in result.content and "integer" in result.content
    assert CALLED == []


def test_valid_arguments_are_coerced_and_the_tool_runs() -> None:
    result, _, _ = run_bad_call(call("get_weather", {"city": "Paris", "days": 3}))
    assert not result.is_error
    assert result.content == "Sunny in Paris for 3 day(s)"
    assert CALLED == [{"city": "Paris", "days": 3}]
    assert result.duration_ms is not None and result.duration_ms >= 0


def test_unknown_tool_name() -> None:
    result, _, _ = run_bad_call(call("get_wether", {"city": "Paris"}))
    assert result.is_error
    assert "Unknown tool 'get_wether'" in result.content
    assert "get_weather" in result.content  # tells the model what exists
    assert CALLED == []


def test_tool_raising_an_exception() -> None:
    def explode(reason: str) -> str:
        raise ValueError(f"boom: {reason}")

    result, _, _ = run_bad_call(call("explode", {"reason": "bad day"}), explode)
    assert result.is_error
    assert result.content == "Tool 'explode' failed: ValueError: boom: bad day"


def test_async_tool_raising_an_exception() -> None:
    async def explode() -> str:
        await asyncio.sleep(0)
        raise KeyError("missing")

    result, _, _ = run_bad_call(call("explode"), explode)
    assert result.is_error
    assert "Tool 'explode' failed: KeyError" in result.content


def test_hanging_async_tool_is_cut_off_by_its_timeout() -> None:
    cancelled = []

    @tool(timeout=0.2)
    async def hang() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    result, _, _ = run_bad_call(call("hang"), hang)
    assert result.is_error
    assert result.content == "Tool 'hang' timed out after 0.2 s and was stopped."
    assert cancelled == [True]


def test_hanging_sync_tool_is_cut_off_by_the_conversation_tool_timeout() -> None:
    release = threading.Event()

    def stuck() -> str:
        release.wait(10)
        return "late"

    def answer(request: Any) -> str:
        release.set()  # the turn went on while the worker thread was still stuck; now let the thread end
        return "Sorry about that."

    try:
        result, _, _ = run_bad_call(call("stuck"), stuck, answer=answer, tool_timeout=0.2)
    finally:
        release.set()
    assert result.is_error
    # A thread cannot be stopped: the result says so rather than claiming it was.
    assert result.content == "Tool 'stuck' did not finish in 0.2 s; it may still be running."


def test_a_timeout_error_raised_by_the_tool_itself_is_a_failure_not_our_deadline() -> None:
    async def upstream() -> str:
        raise TimeoutError("upstream API did not answer")

    result, _, _ = run_bad_call(call("upstream"), upstream)
    assert result.is_error
    assert result.content == "Tool 'upstream' failed: TimeoutError: upstream API did not answer"


def test_a_tool_finishing_within_its_timeout_is_not_cut_off() -> None:
    @tool(timeout=5)
    async def brief() -> str:
        await asyncio.sleep(0.01)
        return "made it"

    result, _, _ = run_bad_call(call("brief"), brief)
    assert (result.content, result.is_error) == ("made it", False)


def test_unencodable_result_is_an_error_result() -> None:
    class Weird:
        def __repr__(self) -> str:
            raise RuntimeError("no repr either")

    def odd() -> Any:
        return {"value": Weird()}

    result, _, _ = run_bad_call(call("odd"), odd)
    assert result.is_error
    assert "Tool 'odd'" in result.content


@pytest.mark.parametrize("arguments", [{"city": None}, {"city": ["Paris"]}, {"city": {"name": "Paris"}}])
def test_null_list_and_object_for_a_string_field(arguments: dict[str, Any]) -> None:
    result, _, _ = run_bad_call(call("get_weather", arguments))
    assert result.is_error
    assert "city: Input should be a valid string" in result.content


class Place(pydantic.BaseModel):
    city: str
    country: str = "FR"


@dataclasses.dataclass
class Report:
    place: str
    temperature: float


def report(place: Place, unit: str = "C") -> Report:
    """Report the weather of a place."""
    return Report(place=f"{place.city}, {place.country}", temperature=21.5)


async def many(places: list[Place]) -> list[Place]:
    """Echo places back."""
    return places


def test_pydantic_argument_and_dataclass_result_through_a_turn() -> None:
    result, _, _ = run_bad_call(call("report", {"place": {"city": "Lyon"}}), report)
    assert not result.is_error
    assert json.loads(result.content) == {"place": "Lyon, FR", "temperature": 21.5}


def test_list_of_models_argument_and_pydantic_result_through_a_turn() -> None:
    result, _, _ = run_bad_call(call("many", {"places": [{"city": "A"}, {"city": "B", "country": "IT"}]}), many)
    assert not result.is_error
    assert json.loads(result.content) == [{"city": "A", "country": "FR"}, {"city": "B", "country": "IT"}]


def test_nested_schema_violation_names_the_path() -> None:
    result, _, _ = run_bad_call(call("report", {"place": {"country": "FR"}}), report)
    assert result.is_error
    assert "place.city: Field required" in result.content


def test_a_credential_in_a_tools_exception_is_masked_before_the_log_and_the_model_see_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Before, a tool that failed with a message quoting a key (a URL with ``?api_key=``, an auth header) put the key
    in the tool result: on the screen, in the store, and in the next request to the model."""
    key = "abc123-SECRETKEY-from-the-environment"
    monkeypatch.setenv("WEATHER_API_KEY", key)
    stray = "sk-proj-AbCdEf0123456789GhIjKl"

    def fetch(city: str) -> str:
        """Fetch the weather."""
        raise RuntimeError(f"GET https://weather.example/?q={city}&api_key={key} failed; fallback key {stray}")

    from threadline import open_store

    store = open_store(f"sqlite:///{tmp_path / 'log.db'}")
    model = ScriptedModel([calls(call("fetch", {"city": "Paris"})), "Sorry."])
    conversation = llm.model(model).tools(fetch).store(store).request("Weather?").prompt_conversation()
    conversation.run_sync(lambda message: None)
    result = conversation.messages[2]
    assert isinstance(result, ToolMessage) and result.is_error
    assert result.content.startswith("Tool 'fetch' failed: RuntimeError: GET https://weather.example/?q=Paris")
    stored = store.load(conversation.id).to_json()
    for text in (result.content, stored, json.dumps([r.messages for r in model.requests], default=str)):
        assert key not in text and stray not in text
    store.close()


def test_an_async_function_behind_a_plain_decorator_and_an_async_generator_give_their_results() -> None:
    """Before, both ran as sync functions and the model got "<coroutine object fetch …>" or "<async_generator
    object …>" as a successful result (the coroutine never awaited, a RuntimeWarning printed)."""
    import functools
    import warnings

    def logged(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return wrapper

    @logged
    async def fetch(city: str) -> str:
        """Fetch the weather."""
        await asyncio.sleep(0)
        return f"22 C in {city}"

    async def count(up_to: int) -> Any:
        """Count."""
        for number in range(up_to):
            await asyncio.sleep(0)
            yield number

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fetched, _, _ = run_bad_call(call("fetch", {"city": "Paris"}, id="f1"), fetch)
        counted, _, _ = run_bad_call(call("count", {"up_to": 3}, id="c1"), count)
    assert (fetched.content, fetched.is_error) == ("22 C in Paris", False)
    assert (json.loads(counted.content), counted.is_error) == ([0, 1, 2], False)


def test_arguments_named_as_pydantic_reserves_are_offered_and_passed_under_their_own_names() -> None:
    """Before, ``model_config`` vanished from the schema (every call then failed with "Extra inputs are not
    permitted") and ``_token`` made `Tool` raise pydantic's NameError."""

    def sign(_token: str, model_config: int, json: str = "raw") -> str:
        """Sign a request.

        Args:
            _token: The signing token.
            model_config: Which model configuration.
            json: Output form.
        """
        return f"{_token}/{model_config}/{json}"

    result, _, _ = run_bad_call(call("sign", {"_token": "t", "model_config": 2}, id="s1"), sign)
    assert (result.content, result.is_error) == ("t/2/raw", False)
    from threadline import Tool

    parameters = Tool(sign).parameters
    assert set(parameters["properties"]) == {"_token", "model_config", "json"}
    assert parameters["required"] == ["_token", "model_config"]
    assert parameters["properties"]["_token"]["description"] == "The signing token."
