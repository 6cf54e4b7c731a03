"""Spending limits (`.budget`): a turn stops before the request that would start past its limit, per turn or per
conversation (summed from the log, so a reloaded conversation keeps its limit), never in the middle of an answer."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from threadline import AssistantMessage, Conversation, ToolMessage, Usage, UserMessage, llm, open_store
from threadline.errors import UserError
from threadline.runs import Node, Run
from threadline.testing import ScriptedModel

from ._support import call, calls

# gpt-4o-mini: 1000 input tokens at $0.15 and 100 output tokens at $0.60 per million = $0.00021 a call.
PER_CALL = Usage(input_tokens=1000, output_tokens=100)


def get_weather(city: str) -> str:
    """Current weather."""
    return f"sunny in {city}"


def tool_loop(name: str = "openai:gpt-4o-mini") -> ScriptedModel:
    """Three rounds of tool calls, then an answer; every call reports `PER_CALL`."""
    script = [calls(call("get_weather", {"city": city})) for city in ("Paris", "Rome", "Oslo")]
    return ScriptedModel([*script, "done"], usage=PER_CALL, name=name)


def test_a_token_budget_stops_the_loop_before_the_request_past_it() -> None:
    model = tool_loop()
    conversation = llm.model(model).tools(get_weather).budget(max_tokens=2500).request("go").prompt_conversation()
    result = conversation.run_sync()
    # 1,100 tokens a call: the third request starts at 2,200 (< 2,500); the fourth would start at 3,300.
    assert len(model.requests) == 3
    assert result.stop_reason == "budget"
    assert result.detail is not None and "3,300 tokens of its 2,500" in result.detail
    assert result.usage.total_tokens == 3300
    # The answer that crossed the limit is whole: its call ran and was answered, and the log is valid.
    assert isinstance(conversation.messages[-1], ToolMessage)
    conversation.messages.validate()


def test_a_cost_budget_stops_the_loop_before_the_request_past_it() -> None:
    model = tool_loop()
    builder = llm.model(model).tools(get_weather).budget(max_cost_usd=0.0005)
    result = builder.request("go").prompt_conversation().run_sync()
    assert len(model.requests) == 3  # $0.00042 before the third request, $0.00063 before a fourth
    assert result.stop_reason == "budget"
    assert result.detail is not None and "$0.000630 of its $0.0005" in result.detail
    assert result.usage.cost is not None and result.usage.cost.usd == Decimal("0.00063")


def test_a_budget_that_is_not_reached_changes_nothing() -> None:
    model = tool_loop()
    result = (
        llm.model(model).tools(get_weather).budget(max_tokens=10_000).request("go").prompt_conversation().run_sync()
    )
    assert result.stop_reason == "end" and len(model.requests) == 4


def test_a_cost_budget_stops_once_a_cost_is_unknown() -> None:
    model = tool_loop(name="scripted")  # not in the price table
    result = llm.model(model).tools(get_weather).budget(max_cost_usd=1).request("go").prompt_conversation().run_sync()
    assert len(model.requests) == 1
    assert result.stop_reason == "budget"
    assert result.detail is not None and "unknown (model scripted)" in result.detail


def test_a_conversation_budget_holds_after_a_reload(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/budget.db"
    with open_store(url) as store:
        first = llm.model(tool_loop()).tools(get_weather).store(store).request("go").prompt_conversation()
        first.run_sync()  # four calls: 4,400 tokens
        cid = first.id
    with open_store(url) as store:
        model = ScriptedModel(["more"], usage=PER_CALL, name="openai:gpt-4o-mini")
        again = Conversation.load(cid, store)
        again.continuation.model(model).budget(max_tokens=5000, per="conversation").request(
            "more"
        ).prompt_conversation()
        result = again.run_sync()
        assert (result.stop_reason, len(model.requests)) == ("end", 1)  # 4,400 < 5,000: one more request
        again.continuation.request("and more").prompt_conversation()
        result = again.run_sync()
        assert (result.stop_reason, len(model.requests)) == ("budget", 1)  # 5,500: none
        assert result.detail is not None and "this conversation used 5,500 tokens of its 5,000" in result.detail
        assert isinstance(again.messages[-1], UserMessage)


def test_a_conversation_budget_holds_in_another_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/budget.db"
    with open_store(url) as store:
        first = llm.model(tool_loop()).tools(get_weather).store(store).request("go").prompt_conversation()
        first.run_sync()
        cid = first.id
    code = (
        "import sys\n"
        "from threadline import Conversation, Usage, open_store\n"
        "from threadline.testing import ScriptedModel\n"
        "model = ScriptedModel(['more'], usage=Usage(input_tokens=1, output_tokens=1), name='openai:gpt-4o-mini')\n"
        "with open_store(sys.argv[1]) as store:\n"
        "    conversation = Conversation.load(sys.argv[2], store)\n"
        "    builder = conversation.continuation.model(model).budget(max_cost_usd=0.0008, per='conversation')\n"
        "    builder.request('more').prompt_conversation()\n"
        "    result = conversation.run_sync()\n"
        "print(result.stop_reason, len(model.requests))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, url, cid], check=True, capture_output=True, text=True, timeout=120
    )
    assert out.stdout.split() == ["budget", "0"]  # $0.00084 spent by the first process


def test_a_run_stops_at_its_budget_and_says_so() -> None:
    model = tool_loop()
    conversation = llm.model(model).tools(get_weather).budget(max_tokens=2000).request("start").prompt_conversation()
    run = Run(conversation, "Report the weather", nodes=[Node("look", "Look it up"), Node("write", "Write it")])
    result = run.run()
    assert result.stop_reason == "budget" and result.pending == ["look", "write"]
    assert result.budget is not None and "tokens of its 2,000" in result.budget
    assert len(model.requests) == 2


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"max_cost_usd": -1}, "max_cost_usd must be a number of US dollars >= 0"),
        ({"max_cost_usd": float("nan")}, "max_cost_usd must be a number of US dollars >= 0"),
        ({"max_cost_usd": "1"}, "max_cost_usd must be a number of US dollars >= 0"),
        ({"max_tokens": 1.5}, "max_tokens must be an integer >= 0"),
        ({"max_tokens": True}, "max_tokens must be an integer >= 0"),
        ({"max_tokens": 10, "per": "week"}, "per must be 'turn' or 'conversation'"),
    ],
)
def test_a_budget_that_is_not_one_is_refused_where_it_is_set(arguments: dict[str, object], problem: str) -> None:
    with pytest.raises(UserError, match=problem):
        llm.budget(**arguments)  # type: ignore[arg-type]


def test_a_turn_without_usage_is_not_stopped_by_a_token_budget() -> None:
    model = ScriptedModel([calls(call("get_weather", {"city": "Paris"})), "done"])
    result = llm.model(model).tools(get_weather).budget(max_tokens=1).request("go").prompt_conversation().run_sync()
    assert result.stop_reason == "end"
    assert isinstance(result.new_messages[-1], AssistantMessage)
