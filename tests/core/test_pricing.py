"""What model calls cost: each assistant message's usage is priced when it is logged (genai-prices' bundled table),
sums keep every unknown part, and nothing about pricing can fail a turn."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadline import AssistantMessage, Cost, MessageList, ModelError, Usage, llm
from threadline.pricing.prices import NOT_REPORTED, log_cost, price, prices_version
from threadline.serialization.file_messages import message_from_file, message_to_file
from threadline.testing import ScriptedModel

from ._support import call, calls


def get_weather(city: str) -> str:
    """Current weather."""
    return f"sunny in {city}"


def table() -> str:
    version = prices_version()
    assert version is not None and version.startswith("genai-prices ")
    return version


# -- one call -----------------------------------------------------------------------------------------------------
def test_a_call_is_priced_from_its_tokens_cached_ones_apart() -> None:
    # gpt-4o: $2.50 per million input tokens, $1.25 per million cached ones, $10 per million output tokens.
    cost = price(Usage(input_tokens=2006, output_tokens=300, cache_read_tokens=1920), "openai:gpt-4o")
    assert cost == Cost(usd=Decimal("0.005615"), prices=table())
    # claude-haiku-4-5: $1 in, $1.25 cache write, $0.10 cache read, $5 out (per million).
    cost = price(
        Usage(input_tokens=3000, output_tokens=100, cache_read_tokens=1000, cache_write_tokens=1000),
        "anthropic:claude-haiku-4-5",
    )
    assert cost == Cost(usd=Decimal("0.00285"), prices=table())


def test_models_whose_prices_change_on_a_date_are_priced_at_todays() -> None:
    # claude-sonnet-4-6's prices in the table are conditional on the request date (and tiered past 200k tokens).
    for name in ("anthropic:claude-sonnet-4-6", "anthropic:claude-opus-4-6"):
        cost = price(Usage(input_tokens=1000, output_tokens=100), name)
        assert cost.known and cost.usd is not None and cost.usd > 0, (name, cost)


def test_a_model_absent_from_the_table_is_unknown_never_free() -> None:
    for name in ("openai:gpt-99-imaginary", "scripted"):
        cost = price(Usage(input_tokens=10, output_tokens=5), name)
        assert cost.usd is None and cost.unknown == (f"model {name}",) and not cost.known


def test_a_token_kind_without_a_price_is_named_and_left_out() -> None:
    # gpt-4o lists no cache-write price: those tokens are unknown, the rest is priced.
    cost = price(Usage(input_tokens=1100, output_tokens=0, cache_write_tokens=1000), "openai:gpt-4o")
    assert cost.unknown == ("cache_write_tokens",)
    assert cost.usd == Decimal("0.00025")  # the 100 uncached input tokens at $2.50 per million


def test_counts_that_are_not_counts_price_nothing_and_say_so() -> None:
    for usage in (Usage(input_tokens=-1, output_tokens=5), Usage(input_tokens=True), Usage(output_tokens="5")):  # type: ignore[arg-type]
        cost = price(usage, "openai:gpt-4o")
        assert cost.usd is None and cost.unknown[0].startswith("token counts that are not counts")


def test_local_models_cost_nothing_known() -> None:
    assert price(Usage(input_tokens=500, output_tokens=50), "local:smollm2") == Cost(
        usd=Decimal(0), prices="local model"
    )


# -- in the log ---------------------------------------------------------------------------------------------------
async def test_each_logged_answer_carries_its_price_and_the_turn_sums_them() -> None:
    model = ScriptedModel(
        [calls(call("get_weather", {"city": "Paris"})), "done"],
        usage=Usage(input_tokens=1000, output_tokens=100, cache_read_tokens=800),
        name="openai:gpt-4o-mini",
    )
    conversation = llm.model(model).tools(get_weather).request("go").prompt_conversation()
    async for _ in conversation:
        pass
    answers = [m for m in conversation.messages if isinstance(m, AssistantMessage)]
    # gpt-4o-mini: 200 uncached at $0.15, 800 cached at $0.075, 100 out at $0.60 (per million)
    one = Cost(usd=Decimal("0.00015"), prices=table())
    assert [m.usage.cost for m in answers if m.usage] == [one, one]
    assert conversation.last_turn is not None and conversation.last_turn.usage.cost == one + one
    assert conversation.cost == Cost(usd=Decimal("0.00030"), prices=table())


async def test_an_answer_without_usage_makes_the_cost_unknown_not_zero() -> None:
    model = ScriptedModel(["hi"], name="openai:gpt-4o-mini")
    conversation = llm.model(model).request("go").prompt_conversation()
    async for _ in conversation:
        pass
    assert conversation.cost == Cost(unknown=(NOT_REPORTED,))
    assert conversation.last_turn is not None and conversation.last_turn.usage.cost == Cost(unknown=(NOT_REPORTED,))


async def test_a_failed_call_that_reported_usage_is_logged_and_priced() -> None:
    failure = ModelError("stopped at the output token limit before answering", type="length")
    failure.usage = Usage(input_tokens=1000, output_tokens=4096)
    conversation = llm.model(ScriptedModel([failure], name="openai:gpt-4o-mini")).request("go").prompt_conversation()
    with pytest.raises(ModelError):
        async for _ in conversation:
            pass
    last = conversation.messages[-1]
    assert isinstance(last, AssistantMessage) and last.error is not None and last.error.type == "length"
    # 1000 in at $0.15, 4096 out at $0.60 (per million)
    billed = Cost(usd=Decimal("0.0026076"), prices=table())
    assert last.usage == Usage(input_tokens=1000, output_tokens=4096, cost=billed)
    assert conversation.cost == billed
    assert conversation.last_turn is not None and conversation.last_turn.usage.cost == billed


async def test_a_model_reporting_negative_counts_keeps_its_turn() -> None:
    model = ScriptedModel(["hi"], usage=Usage(input_tokens=-5, output_tokens=2), name="openai:gpt-4o-mini")
    conversation = llm.model(model).request("go").prompt_conversation()
    async for _ in conversation:
        pass
    assert conversation.text == "hi"
    assert conversation.messages[-1].usage is None  # type: ignore[union-attr]  # counts that are not counts are dropped
    assert conversation.cost == Cost(unknown=(NOT_REPORTED,))


def test_a_price_table_that_fails_to_load_gives_unknown_and_the_turn_goes_on() -> None:
    code = (
        "import sys\n"
        "sys.modules['genai_prices'] = None  # the table cannot be imported\n"
        "from threadline import Usage, llm\n"
        "from threadline.testing import ScriptedModel\n"
        "model = ScriptedModel(['hi'], usage=Usage(input_tokens=3, output_tokens=1), name='openai:gpt-4o-mini')\n"
        "conversation = llm.model(model).request('go').prompt_conversation()\n"
        "conversation.run_sync()\n"
        "print(conversation.text)\n"
        "print(conversation.cost)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120)
    text, cost = out.stdout.splitlines()
    assert text == "hi"
    assert cost == (
        "Cost(usd=None, unknown=(\"price table: genai-prices is not installed (pip install 'threadline[cost]')\",), "
        "prices=None)"
    )


def test_import_threadline_does_not_load_the_price_table() -> None:
    code = "import sys, threadline\nprint('genai_prices' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False"


# -- sums ---------------------------------------------------------------------------------------------------------
NAMES = ("openai:gpt-4o-mini", "anthropic:claude-haiku-4-5", "openai:gpt-99-imaginary", "local:smollm2")
COUNTS = st.integers(min_value=0, max_value=200_000)


@st.composite
def answers(draw: st.DrawFn) -> list[AssistantMessage]:
    out = []
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        if draw(st.booleans()) and out:
            out.append(AssistantMessage(content="no usage reported", model=draw(st.sampled_from(NAMES))))
            continue
        inputs = draw(COUNTS)
        read = draw(st.integers(min_value=0, max_value=inputs))
        written = draw(st.integers(min_value=0, max_value=inputs - read))
        usage = Usage(
            input_tokens=inputs, output_tokens=draw(COUNTS), cache_read_tokens=read, cache_write_tokens=written
        )
        out.append(AssistantMessage(content="ok", usage=usage, model=draw(st.sampled_from(NAMES))))
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answers())
def test_the_sum_of_the_messages_costs_is_the_conversations(script: list[AssistantMessage]) -> None:
    by_name: dict[str, list[AssistantMessage]] = {}
    for answer in script:
        by_name.setdefault(answer.model or "", []).append(answer)
    conversation = None
    for name, items in by_name.items():
        model = ScriptedModel(items, name=name)
        builder = llm.model(model) if conversation is None else conversation.continuation.model(model)
        for _ in items:
            conversation = builder.request("next").prompt_conversation()
            conversation.run_sync()
            builder = conversation.continuation
    assert conversation is not None
    logged = [m for m in conversation.messages if isinstance(m, AssistantMessage)]
    assert len(logged) == len(script)
    total = Cost()
    exact = Decimal(0)
    for message in logged:
        part = message.usage.cost if message.usage is not None else Cost(unknown=(NOT_REPORTED,))
        assert part is not None
        total = total + part
        exact += part.usd or 0
    assert conversation.cost == total == log_cost(conversation.messages)
    assert (conversation.cost.usd or 0) == exact  # exact decimals: no rounding on the way
    unknown = {part for m in logged for part in (m.usage.cost.unknown if m.usage and m.usage.cost else (NOT_REPORTED,))}
    assert set(conversation.cost.unknown) == unknown  # every unknown part is kept, none twice


# -- the file format ----------------------------------------------------------------------------------------------
def test_a_log_without_cache_or_cost_is_written_as_before() -> None:
    log = MessageList([AssistantMessage(content="x", usage=Usage(input_tokens=10, output_tokens=5), id="a")])
    assert b'"usage":{"input_tokens":10,"output_tokens":5}' in log.to_json().encode()


def test_cached_tokens_and_cost_survive_every_form() -> None:
    cost = Cost(usd=Decimal("0.0026076"), unknown=("cache_write_tokens",), prices="genai-prices 0.2.3")
    usage = Usage(input_tokens=1000, output_tokens=40, cache_read_tokens=600, cache_write_tokens=300, cost=cost)
    log = MessageList([AssistantMessage(content="x", usage=usage, model="openai:gpt-4o-mini")])
    text = log.to_json()
    assert '"cost":{"usd":"0.0026076","unknown":["cache_write_tokens"],"prices":"genai-prices 0.2.3"}' in text
    assert MessageList.from_json(text)[0].usage == usage  # type: ignore[union-attr]
    assert message_from_file(message_to_file(log[0])).usage == usage  # type: ignore[union-attr]


def test_an_old_log_reads_and_its_unpriced_usage_is_an_unknown_part() -> None:
    old = (
        '{"version": "2.1", "messages": [{"role": "assistant", "content": "hi", "model": "openai:gpt-4o", '
        '"usage": {"input_tokens": 10, "output_tokens": 5}, "id": "a", "created_at": "2026-01-01T00:00:00Z"}]}'
    )
    log = MessageList.from_json(old)
    assert log[0].usage == Usage(input_tokens=10, output_tokens=5)  # type: ignore[union-attr]
    assert log_cost(log) == Cost(unknown=("usage not priced",))


def test_a_negative_cost_in_a_file_is_refused_naming_its_place() -> None:
    bad = (
        '{"version": "2.1", "messages": [{"role": "assistant", "content": "hi", '
        '"usage": {"input_tokens": 10, "cost": {"usd": "-1"}}, "id": "a", "created_at": "2026-01-01T00:00:00Z"}]}'
    )
    with pytest.raises(Exception, match=r"usage\.cost\.usd"):
        MessageList.from_json(bad)
