"""The request cache: a finished result is found again by its hash in another process (SQLite and PostgreSQL)
without a model call, failures are never cached, and overlapping identical calls share one model call."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest

from tests.core._support import call, calls, shapes
from tests.store._backends import write_cache_row
from threadline import AssistantMessage, Cost, ModelError, Usage, UserError, generate_text, user
from threadline.generate.result import cache_key
from threadline.pricing.prices import prices_version
from threadline.store import Store, open_store
from threadline.testing import ScriptedModel, ScriptedRequest


def get_weather(city: str) -> str:
    """Current weather in a city."""
    return f"22 C in {city}"


CHILD = """
import sys
from threadline import generate_text_sync, open_store, AssistantMessage, ToolCall, Usage
from threadline.testing import ScriptedModel

def get_weather(city: str) -> str:
    \"\"\"Current weather in a city.\"\"\"
    return f"22 C in {city}"

store = open_store(sys.argv[1])
model = ScriptedModel(
    [AssistantMessage(tool_calls=[ToolCall(id="w1", name="get_weather", arguments={"city": "Paris"})]), "Sunny."],
    usage=Usage(input_tokens=5, output_tokens=2),
)
result = generate_text_sync(
    model=model, system="Be terse.", prompt="Weather in Paris?", tools=[get_weather], cache=store
)
store.close()
print(result.request_hash)
"""


async def test_a_result_cached_by_another_process_is_returned_without_a_model_call(store_url: str) -> None:
    out = subprocess.run([sys.executable, "-c", CHILD, store_url], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    child_hash = out.stdout.strip()

    store = open_store(store_url)
    try:
        model = ScriptedModel()  # any request would fail: nothing is scripted
        question = user("Weather in Paris?")
        result = await generate_text(
            model=model, system="Be terse.", messages=[question], tools=[get_weather], cache=store
        )
    finally:
        store.close()

    assert model.requests == []
    assert result.cached and result.request_hash == child_hash
    assert result.text == "Sunny."
    assert result.messages[0] is question  # the caller's own input, then what the first run produced
    assert [type(m).__name__ for m in result.messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
    ]
    assert result.messages[2].content == "22 C in Paris"
    assert result.usage == Usage(
        input_tokens=10, output_tokens=4, cost=Cost(unknown=("model scripted",), prices=prices_version())
    )
    assert [len(step.tool_calls) for step in result.steps] == [1, 0]
    assert result.steps[1].messages[0].content == "Be terse."
    assert shapes(result.steps[1].messages[1:]) == shapes(result.messages[:3])
    result.messages.validate()


async def test_the_cache_works_in_memory_too() -> None:
    store = open_store("memory://")
    first = await generate_text(model=ScriptedModel(["Hi there."]), prompt="Hi", cache=store)
    again = await generate_text(model=ScriptedModel(), prompt="Hi", cache=store)
    assert not first.cached and again.cached
    assert again.text == "Hi there." and shapes(again.new_messages) == shapes(first.new_messages)


async def test_a_different_request_is_not_served_from_the_cache(any_store: Store) -> None:
    await generate_text(model=ScriptedModel(["Paris."]), prompt="Capital of France?", cache=any_store)
    model = ScriptedModel(["Rome."])
    result = await generate_text(model=model, prompt="Capital of Italy?", cache=any_store)
    assert not result.cached and result.text == "Rome." and len(model.requests) == 1


async def test_failures_are_never_cached(any_store: Store) -> None:
    with pytest.raises(ModelError):
        await generate_text(
            model=ScriptedModel([ModelError("overloaded", type="server")]), prompt="Hi", cache=any_store
        )
    model = ScriptedModel(["Hello."])
    result = await generate_text(model=model, prompt="Hi", cache=any_store)
    assert len(model.requests) == 1 and not result.cached and result.text == "Hello."
    hit = await generate_text(model=ScriptedModel(), prompt="Hi", cache=any_store)
    assert hit.cached and hit.text == "Hello."


async def test_a_cache_must_be_a_store(tmp_path: Any) -> None:
    model = ScriptedModel(["never"])
    with pytest.raises(UserError, match="cache= takes a store"):
        await generate_text(model=model, prompt="Hi", cache=str(tmp_path))  # type: ignore[arg-type]
    assert model.requests == []


def slow_answer(release: asyncio.Event, text: str) -> Any:
    async def answer(request: ScriptedRequest) -> str:
        await release.wait()
        return text

    return answer


async def test_overlapping_identical_calls_share_one_model_call() -> None:
    release = asyncio.Event()
    model = ScriptedModel([slow_answer(release, "Shared answer."), "A second answer."])
    first_input, second_input = user("Hi"), user("Hi")
    partials: list[str] = []
    calls_ = [
        asyncio.ensure_future(generate_text(model=model, messages=[first_input])),
        asyncio.ensure_future(generate_text(model=model, messages=[second_input], on_partial=partials.append)),
    ]
    await asyncio.sleep(0.01)
    release.set()
    one, two = await asyncio.gather(*calls_)

    assert len(model.requests) == 1
    assert one.text == two.text == "Shared answer."
    assert one.messages[0] is first_input and two.messages[0] is second_input
    assert partials and partials[-1] == "Shared answer."  # the second caller still sees the stream


async def test_without_dedupe_each_call_asks_the_model() -> None:
    model = ScriptedModel(["One.", "Two."])
    results = await asyncio.gather(
        generate_text(model=model, prompt="Hi", dedupe=False), generate_text(model=model, prompt="Hi", dedupe=False)
    )
    assert len(model.requests) == 2 and sorted(r.text for r in results) == ["One.", "Two."]


async def test_a_shared_call_goes_on_while_one_caller_still_waits() -> None:
    release = asyncio.Event()
    model = ScriptedModel([slow_answer(release, "Still here.")])
    leaving = asyncio.ensure_future(generate_text(model=model, prompt="Hi"))
    staying = asyncio.ensure_future(generate_text(model=model, prompt="Hi"))
    await asyncio.sleep(0.01)
    leaving.cancel()
    await asyncio.sleep(0.01)
    release.set()
    result = await staying
    assert result.text == "Still here." and len(model.requests) == 1
    assert leaving.cancelled()


async def test_a_shared_failure_reaches_every_caller_with_its_log() -> None:
    release = asyncio.Event()

    async def fail(request: ScriptedRequest) -> ModelError:
        await release.wait()
        return ModelError("down", type="server", partial="Par")

    model = ScriptedModel([fail])
    tasks = [asyncio.ensure_future(generate_text(model=model, prompt="Hi")) for _ in range(2)]
    await asyncio.sleep(0.01)
    release.set()
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    assert len(model.requests) == 1
    for outcome in outcomes:
        assert isinstance(outcome, ModelError) and outcome.messages is not None
        failure = outcome.messages[-1]
        assert isinstance(failure, AssistantMessage) and failure.content == "Par"


async def test_tool_rounds_are_cached_whole(any_store: Store) -> None:
    model = ScriptedModel([calls(call("get_weather", {"city": "Oslo"})), "Cold."])
    first = await generate_text(model=model, prompt="Oslo?", tools=[get_weather], cache=any_store)
    hit = await generate_text(model=ScriptedModel(), prompt="Oslo?", tools=[get_weather], cache=any_store)
    assert hit.cached and shapes(hit.new_messages) == shapes(first.new_messages)
    assert hit.stop_reason == first.stop_reason == "end"


def oslo_model(answer: str = "Cold.") -> ScriptedModel:
    return ScriptedModel(
        [calls(call("get_weather", {"city": "Oslo"})), answer], usage=Usage(input_tokens=5, output_tokens=2)
    )


async def ask_oslo(model: ScriptedModel, store: Store, question: Any = None) -> Any:
    messages = [question or user("Oslo?")]
    return await generate_text(model=model, system="Be terse.", messages=messages, tools=[get_weather], cache=store)


async def test_a_hit_gives_back_the_result_the_model_call_gave(any_store: Store) -> None:
    question = user("Oslo?")
    first = await ask_oslo(oslo_model(), any_store, question)
    hit = await ask_oslo(ScriptedModel(), any_store, question)
    assert hit.cached and not first.cached
    # The same messages (ids, times, usage and durations included), steps and figures.
    assert hit.messages == first.messages and hit.new_messages == first.new_messages
    assert (hit.text, hit.usage, hit.stop_reason, hit.request_hash) == (
        first.text,
        first.usage,
        first.stop_reason,
        first.request_hash,
    )
    assert hit.steps == first.steps
    assert [len(step.messages) for step in hit.steps] == [2, 4]  # the system prefix, then the log so far


def damage_message_kind(value: dict[str, Any]) -> None:
    value["messages"][0]["role"] = "robot"


def damage_step_past_the_messages(value: dict[str, Any]) -> None:
    value["steps"][0]["at"] = 99


def damage_step_at_a_tool_result(value: dict[str, Any]) -> None:
    value["steps"][0]["at"] = 1


def damage_negative_position(value: dict[str, Any]) -> None:
    value["steps"][1]["at"] = -1


def damage_prefix_past_the_messages(value: dict[str, Any]) -> None:
    value["steps"][0]["prefix"] = [99]


def damage_new_count(value: dict[str, Any]) -> None:
    value["new_count"] = 99


def damage_repeated_id(value: dict[str, Any]) -> None:
    value["messages"][1]["id"] = value["messages"][0]["id"]


def damage_result_answers_no_call(value: dict[str, Any]) -> None:
    value["messages"][1]["tool_call_id"] = "a call nobody made"


def damage_text_type(value: dict[str, Any]) -> None:
    value["text"] = 5


def damage_missing_field(value: dict[str, Any]) -> None:
    del value["usage"]


@pytest.mark.parametrize(
    "damage",
    [
        damage_message_kind,
        damage_step_past_the_messages,
        damage_step_at_a_tool_result,
        damage_negative_position,
        damage_prefix_past_the_messages,
        damage_new_count,
        damage_repeated_id,
        damage_result_answers_no_call,
        damage_text_type,
        damage_missing_field,
    ],
)
async def test_a_cached_value_that_is_not_a_whole_result_is_a_miss_and_is_replaced(
    any_store: Store, damage: Any
) -> None:
    first = await ask_oslo(oslo_model(), any_store)
    key = cache_key(first.request_hash)
    value = any_store.cache_get(key)
    damage(value)
    any_store.cache_put(key, value)  # e.g. written by another version

    model = oslo_model("Cold again.")
    again = await ask_oslo(model, any_store)
    assert not again.cached and again.text == "Cold again." and len(model.requests) == 2
    again.messages.validate()
    hit = await ask_oslo(ScriptedModel(), any_store)
    assert hit.cached and hit.text == "Cold again."


async def test_a_damaged_cache_row_is_a_miss_and_is_replaced(store: Store, store_url: str) -> None:
    first = await ask_oslo(oslo_model(), store)
    write_cache_row(store_url, cache_key(first.request_hash), '{"text": "Cold.", "stop_reason": "en')
    model = oslo_model("Cold again.")
    again = await ask_oslo(model, store)
    assert not again.cached and again.text == "Cold again." and len(model.requests) == 2
    hit = await ask_oslo(ScriptedModel(), store)
    assert hit.cached and hit.text == "Cold again."


async def test_a_cache_hit_asked_to_be_logged_is_logged_under_the_id_asked_for(any_store: Store) -> None:
    """Before, a hit returned ``conversation_id=None`` and wrote nothing, whatever ``store=`` and
    ``conversation_id=`` said, and an id already taken was not refused."""
    logs = open_store("memory://")
    first = await generate_text(model=ScriptedModel(["Paris."]), prompt="Capital of France?", cache=any_store)
    hit = await generate_text(
        model=ScriptedModel(), prompt="Capital of France?", cache=any_store, store=logs, conversation_id="wanted"
    )
    assert hit.cached and hit.conversation_id == "wanted"
    assert shapes(logs.load("wanted")) == shapes(first.messages)
    assert logs.get_conversation("wanted").metadata["cached"] is True
    with pytest.raises(UserError, match="already exists"):
        await generate_text(
            model=ScriptedModel(), prompt="Capital of France?", cache=any_store, store=logs, conversation_id="wanted"
        )


async def test_overlapping_calls_that_log_each_write_their_own_conversation() -> None:
    """Before, the second of two overlapping identical calls shared the first's run: it reported the first one's
    conversation id, and its own store (or id) was never written."""
    release = asyncio.Event()
    model = ScriptedModel([slow_answer(release, "One."), slow_answer(release, "Two.")])
    mine, theirs = open_store("memory://"), open_store("memory://")
    calls_ = [
        asyncio.ensure_future(generate_text(model=model, prompt="Hi", store=mine, conversation_id="conv-a")),
        asyncio.ensure_future(generate_text(model=model, prompt="Hi", store=theirs, conversation_id="conv-b")),
    ]
    await asyncio.sleep(0.01)
    release.set()
    one, two = await asyncio.gather(*calls_)
    assert (one.conversation_id, two.conversation_id) == ("conv-a", "conv-b")
    assert [m.content for m in mine.load("conv-a")] == ["Hi", one.text]
    assert [m.content for m in theirs.load("conv-b")] == ["Hi", two.text]
    assert len(model.requests) == 2
