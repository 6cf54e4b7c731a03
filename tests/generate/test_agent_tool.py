"""agent_tool: a tool whose handler is a whole sub-conversation with its own model, tools and log; nested two deep,
each child's tool calls are in its own log, stored as its own conversation and linked from the parent's result."""

from __future__ import annotations

import json

import pytest

from tests.core._support import call, calls
from threadline import ModelError, Toolset, UserError, agent_tool, find_tool_result, generate_text, llm
from threadline.store import Store
from threadline.testing import ScriptedModel


def get_weather(city: str) -> str:
    """Current weather in a city."""
    return f"22 C in {city}"


async def test_sub_agents_nest_two_deep_each_with_its_own_stored_log(store: Store) -> None:
    grandchild_model = ScriptedModel([calls(call("get_weather", {"city": "Paris"})), "Paris: 22 C."])
    grandchild = llm.model(grandchild_model).agent("You check weather.").tools(get_weather).store(store)
    child_model = ScriptedModel([calls(call("weather_desk", {"task": "Weather in Paris"})), "Report: Paris 22 C."])
    child = (
        llm.model(child_model)
        .agent("You write reports.")
        .tools(agent_tool(grandchild, "weather_desk", "Checks the weather."))
        .store(store)
    )
    parent_model = ScriptedModel([calls(call("reporter", {"task": "Report on Paris"})), "Done: Paris 22 C."])

    result = await generate_text(
        model=parent_model,
        prompt="Brief me on Paris.",
        tools=[agent_tool(child, "reporter", "Writes reports.")],
        store=store,
    )

    assert result.text == "Done: Paris 22 C."
    reported = find_tool_result(result.messages, "reporter")
    assert reported is not None and not reported.is_error
    answer = json.loads(reported.content)
    assert answer["result"] == "Report: Paris 22 C."

    child_log = store.load(answer["conversation_id"])
    assert child_log[-1].content == "Report: Paris 22 C."
    assert child_model.requests[0].messages[-1].content == "Report on Paris"
    desk = find_tool_result(child_log, "weather_desk")
    assert desk is not None
    grandchild_answer = json.loads(desk.content)
    assert grandchild_answer["result"] == "Paris: 22 C."

    grandchild_log = store.load(grandchild_answer["conversation_id"])
    weather = find_tool_result(grandchild_log, "get_weather")
    assert weather is not None and weather.content == "22 C in Paris"
    for log in (child_log, grandchild_log, store.load(result.conversation_id or "")):
        log.validate()
    assert find_tool_result(result.messages, "get_weather") is None  # the parent's log holds only its own calls


async def test_without_a_store_the_parent_sees_the_childs_text() -> None:
    child_model = ScriptedModel([calls(call("get_weather", {"city": "Rome"})), "Rome: 22 C."])
    child = llm.model(child_model).tools(get_weather)
    parent_model = ScriptedModel([calls(call("weather", {"task": "Rome?"})), "It is 22 C in Rome."])
    result = await generate_text(
        model=parent_model, prompt="Rome?", tools=[agent_tool(child, "weather", "Answers weather questions.")]
    )
    found = find_tool_result(result.messages, "weather")
    assert found is not None and found.content == "Rome: 22 C."
    assert parent_model.requests[0].tools[0].parameters["required"] == ["task"]
    assert [m.role for m in child_model.requests[1].messages][-3:] == ["user", "assistant", "tool"]


async def test_a_callable_can_run_generate_text_and_return_structured_results() -> None:
    async def planner(task: str) -> dict[str, object]:
        inner = await generate_text(model=ScriptedModel(["step one; step two"]), prompt=task)
        return {"task": task, "steps": inner.text.split("; ")}

    parent_model = ScriptedModel([calls(call("plan", {"task": "Plan a trip"})), "Planned."])
    result = await generate_text(model=parent_model, prompt="Plan", tools=[agent_tool(planner, "plan", "Plans.")])
    found = find_tool_result(result.messages, "plan")
    assert found is not None and json.loads(found.content) == {"task": "Plan a trip", "steps": ["step one", "step two"]}


async def test_a_failing_sub_agent_becomes_an_error_result_for_the_parent() -> None:
    child = llm.model(ScriptedModel([]))  # its model has nothing to say: the call fails
    parent_model = ScriptedModel([calls(call("helper", {"task": "x"})), "Recovered."])
    result = await generate_text(
        model=parent_model, prompt="Go", tools=Toolset([agent_tool(child, "helper", "Helps.")])
    )
    found = find_tool_result(result.messages, "helper")
    assert found is not None and found.is_error
    assert result.text == "Recovered."


class UnreadableModelError(ModelError):
    """A custom model's own ModelError, whose message cannot be read: its __str__ raises SystemExit (issue 31)."""

    def __str__(self) -> str:
        raise SystemExit("from __str__")


class Unreadable(Exception):
    """A tool's exception whose message cannot be read: its __str__ raises SystemExit (issue 31)."""

    def __str__(self) -> str:
        raise SystemExit("from __str__")


async def test_a_sub_agent_failing_with_an_unreadable_error_is_an_error_result_for_the_parent() -> None:
    child = llm.model(ScriptedModel([UnreadableModelError("hidden", type="server")]))
    parent_model = ScriptedModel([calls(call("helper", {"task": "x"})), "Recovered."])
    result = await generate_text(model=parent_model, prompt="Go", tools=[agent_tool(child, "helper", "Helps.")])
    found = find_tool_result(result.messages, "helper")
    assert found is not None and found.is_error
    assert found.content == "Tool 'helper' failed: UnreadableModelError (its message could not be read)"
    assert result.text == "Recovered."


async def test_a_sub_agents_tool_raising_an_unreadable_error_is_an_error_result_in_its_own_log(store: Store) -> None:
    def fragile() -> str:
        """Fail."""
        raise Unreadable

    child_model = ScriptedModel([calls(call("fragile")), "The tool failed."])
    child = llm.model(child_model).tools(fragile)
    parent_model = ScriptedModel([calls(call("helper", {"task": "x"})), "Done."])
    result = await generate_text(
        model=parent_model, prompt="Go", tools=[agent_tool(child, "helper", "Helps.", store=store)]
    )
    found = find_tool_result(result.messages, "helper")
    assert found is not None and not found.is_error
    child_id = json.loads(found.content)["conversation_id"]
    child_log = store.load(child_id)
    child_log.validate()
    failed = find_tool_result(child_log, "fragile")
    assert failed is not None and failed.content == "Tool 'fragile' failed: Unreadable (its message could not be read)"
    assert result.text == "Done."


async def test_bad_arguments_are_returned_to_the_model() -> None:
    child_model = ScriptedModel(["never"])
    parent_model = ScriptedModel([calls(call("helper", {"job": "x"})), "ok"])
    result = await generate_text(
        model=parent_model, prompt="Go", tools=[agent_tool(llm.model(child_model), "helper", "Helps.")]
    )
    found = find_tool_result(result.messages, "helper")
    assert found is not None and found.is_error and "task" in found.content
    assert child_model.requests == []


def test_agent_tool_refuses_what_cannot_run() -> None:
    with pytest.raises(UserError):
        agent_tool("not a builder", "x", "y")  # type: ignore[arg-type]
    with pytest.raises(UserError):
        agent_tool(llm, "", "y")


@pytest.mark.parametrize("asks", [False, True])
async def test_a_callable_returning_a_builder_gets_the_task_unless_it_asks_for_itself(asks: bool) -> None:
    """Before, a builder that only set the agent up (``.agent("You are a researcher.")``, a system message) ran
    without the task: the child model was asked nothing."""
    child_model = ScriptedModel(["Found it."])

    def researcher(task: str) -> object:
        builder = llm.model(child_model).agent("You are a researcher.")
        return builder.request(f"Research this: {task}") if asks else builder

    parent_model = ScriptedModel([calls(call("research", {"task": "find X"})), "Done."])
    result = await generate_text(
        model=parent_model, prompt="Go", tools=[agent_tool(researcher, "research", "Researches.")]
    )
    assert result.text == "Done."
    [request] = child_model.requests
    asked = [m.content for m in request.messages if m.role == "user"]
    assert asked == (["Research this: find X"] if asks else ["find X"])
