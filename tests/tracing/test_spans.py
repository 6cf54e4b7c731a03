"""What a tracing back end shows of threadline's turns: one ``invoke_agent`` span per turn, a ``chat <model>`` span per
model call and an ``execute_tool <name>`` span per tool call under it, named and annotated as OpenTelemetry's GenAI
semantic conventions say (``gen_ai.*``; see `threadline.tracing._otel` for the sources); the same for
``generate_text``, runs and `agent_tool` sub-conversations; nothing once uninstrumented.

The spans are read from the SDK's in-memory exporter (conftest.py)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

import threadline
from tests.providers.servers import FakeResponses
from threadline import (
    AssistantMessage,
    Conversation,
    ConversationConfig,
    Reasoning,
    ToolCall,
    Usage,
    UserMessage,
    agent_tool,
    generate_text,
    llm,
    open_store,
)
from threadline.errors import ModelError
from threadline.models.openai_responses import OpenAIResponsesModel
from threadline.pricing.prices import prices_version
from threadline.runs import Node, Run
from threadline.testing import ScriptedModel

from .conftest import Spans

MODEL = "openai:gpt-4o-mini"
PRICES = prices_version()


def get_weather(city: str) -> str:
    """Current weather in a city."""
    return f"22 C and sunny in {city}"


def get_time(city: str) -> str:
    """Local time in a city."""
    return f"12:00 in {city}"


def calls(*pairs: tuple[str, str, dict[str, Any]], **fields: Any) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=[ToolCall(id=id, name=name, arguments=arguments) for id, name, arguments in pairs], **fields
    )


def attributes(span: Any) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_a_tool_turn_is_an_invoke_agent_span_with_chat_and_execute_tool_children(spans: Spans) -> None:
    usage = Usage(input_tokens=120, output_tokens=30, reasoning_tokens=12)
    model = ScriptedModel(
        [
            calls(("c1", "get_weather", {"city": "Paris"}), ("c2", "get_time", {"city": "Paris"}), usage=usage),
            AssistantMessage(content="Sunny, noon.", model="gpt-4o-mini-2024-07-18", usage=usage),
        ],
        name=MODEL,
    )
    conversation = llm.model(model).tools(get_weather, get_time).request("Weather and time in Paris?")
    assert conversation.prompt() == "Sunny, noon."

    turn = spans.one("invoke_agent threadline")
    assert spans.roots() == [turn]
    assert spans.tree(turn) == [
        "invoke_agent threadline",
        [
            ["chat gpt-4o-mini", []],
            ["execute_tool get_weather", []],
            ["execute_tool get_time", []],
            ["chat gpt-4o-mini", []],
        ],
    ]
    conversation_id = attributes(turn)["gen_ai.conversation.id"]
    assert isinstance(conversation_id, str) and conversation_id
    assert turn.kind == SpanKind.INTERNAL
    assert attributes(turn) | {} == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "threadline",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.conversation.id": conversation_id,
        "gen_ai.usage.input_tokens": 240,
        "gen_ai.usage.output_tokens": 60,
        "gen_ai.usage.reasoning.output_tokens": 24,
        "threadline.usage.cost_usd": 0.000072,  # two calls of 120 input tokens at $0.15 and 30 output at $0.60 per M
        "threadline.usage.prices": PRICES,
        "threadline.turn.stop_reason": "end",
        "threadline.turn.rounds": 1,
    }

    first, weather, time_, last = spans.children(turn)
    assert first.kind == SpanKind.CLIENT
    assert attributes(first) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.conversation.id": conversation_id,
        "gen_ai.response.model": "gpt-4o-mini",
        "gen_ai.response.finish_reasons": ("tool_calls",),
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 30,
        "gen_ai.usage.reasoning.output_tokens": 12,
        "threadline.usage.cost_usd": 0.000036,
        "threadline.usage.prices": PRICES,
    }
    assert attributes(last)["gen_ai.response.model"] == "gpt-4o-mini-2024-07-18"
    assert attributes(last)["gen_ai.response.finish_reasons"] == ("stop",)
    assert weather.kind == SpanKind.INTERNAL
    assert attributes(weather) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Current weather in a city.",
    }
    assert attributes(time_)["gen_ai.tool.call.id"] == "c2"
    for span in spans.all:
        assert span.status.status_code == StatusCode.UNSET
        assert span.context.trace_id == turn.context.trace_id
    # The model calls and the tools happen in that order, each inside the turn.
    assert turn.start_time <= first.start_time and first.end_time <= weather.start_time
    assert weather.end_time <= last.start_time and last.end_time <= turn.end_time


def test_cached_tokens_and_cost_are_on_the_chat_span_and_summed_on_the_turn(spans: Spans) -> None:
    cached = Usage(input_tokens=2006, output_tokens=300, cache_read_tokens=1920, cache_write_tokens=0)
    written = Usage(input_tokens=1100, output_tokens=10, cache_write_tokens=1000)
    script = [
        calls(("c1", "get_weather", {"city": "Oslo"}), usage=cached),
        AssistantMessage(content="Cold.", usage=written),
    ]
    model = ScriptedModel(script, name="openai:gpt-4o")
    llm.model(model).tools(get_weather).request("Weather in Oslo?").prompt()

    turn = spans.one("invoke_agent threadline")
    first, _, last = spans.children(turn)
    # gpt-4o: $2.50 per million input tokens, $1.25 cached, $10 output
    assert {k: v for k, v in attributes(first).items() if "usage" in k} == {
        "gen_ai.usage.input_tokens": 2006,
        "gen_ai.usage.output_tokens": 300,
        "gen_ai.usage.cache_read.input_tokens": 1920,
        "threadline.usage.cost_usd": 0.005615,
        "threadline.usage.prices": PRICES,
    }
    # gpt-4o lists no cache-write price: those tokens are named unknown, the rest is priced, never 0
    assert {k: v for k, v in attributes(last).items() if "usage" in k} == {
        "gen_ai.usage.input_tokens": 1100,
        "gen_ai.usage.output_tokens": 10,
        "gen_ai.usage.cache_creation.input_tokens": 1000,
        "threadline.usage.cost_usd": 0.00035,
        "threadline.usage.cost_unknown": ("cache_write_tokens",),
        "threadline.usage.prices": PRICES,
    }
    assert {k: v for k, v in attributes(turn).items() if "usage" in k} == {
        "gen_ai.usage.input_tokens": 3106,
        "gen_ai.usage.output_tokens": 310,
        "gen_ai.usage.cache_read.input_tokens": 1920,
        "gen_ai.usage.cache_creation.input_tokens": 1000,
        "threadline.usage.cost_usd": 0.005965,
        "threadline.usage.cost_unknown": ("cache_write_tokens",),
        "threadline.usage.prices": PRICES,
    }


def test_the_response_model_loses_only_the_models_own_provider_prefix(spans: Spans) -> None:
    """Before: an answer logged under ``llama3:8b`` (an Ollama-style id, no provider prefix) showed as ``8b``."""
    answers = [
        AssistantMessage(content="One.", model="llama3:8b"),
        AssistantMessage(content="Two.", model="openai:gpt-4o-mini-2024-07-18"),
    ]
    conversation = llm.model(ScriptedModel(answers, name=MODEL)).request("Count.").prompt_conversation()
    conversation.run_sync()
    conversation.continuation.request("Again.").prompt()
    first, second = spans.named(f"chat {MODEL.partition(':')[2]}")
    assert attributes(first)["gen_ai.response.model"] == "llama3:8b"
    assert attributes(second)["gen_ai.response.model"] == "gpt-4o-mini-2024-07-18"


def test_the_turn_span_carries_the_conversation_id_of_the_conversation(spans: Spans) -> None:
    conversation = Conversation(config=ConversationConfig(model=ScriptedModel(["Hi."])))
    conversation.add(UserMessage(content="Hello"))
    conversation.run_sync()
    assert attributes(spans.one("invoke_agent threadline"))["gen_ai.conversation.id"] == conversation.id
    assert attributes(spans.one("chat scripted"))["gen_ai.conversation.id"] == conversation.id


def test_without_include_content_no_message_text_reaches_a_span(spans: Spans) -> None:
    model = ScriptedModel(
        [
            calls(("c1", "get_weather", {"city": "Zanzibar"}), reasoning=[Reasoning(text="I should look it up.")]),
            "It is sunny in Zanzibar today.",
        ]
    )
    llm.model(model).agent("You are a weather bot.").tools(get_weather).request("Weather in Zanzibar?").prompt()
    text = spans.text()
    assert len(spans.all) == 4
    for secret_of_the_user in ("Zanzibar", "weather bot", "look it up", "sunny"):
        assert secret_of_the_user not in text
    for name in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments"):
        assert name not in text


def test_with_include_content_the_messages_are_recorded_in_the_conventions_shapes(spans: Spans) -> None:
    spans.instrument(include_content=True)
    model = ScriptedModel(
        [
            calls(
                ("c1", "get_weather", {"city": "Zanzibar"}),
                reasoning=[Reasoning(text="I should look it up.", signature="SIGNATURE-abc123", provider="anthropic")],
            ),
            "It is sunny in Zanzibar today.",
        ]
    )
    llm.model(model).agent("You are a weather bot.").tools(get_weather).request("Weather in Zanzibar?").prompt()
    turn = spans.one("invoke_agent threadline")
    first, tool, last = spans.children(turn)

    sent = json.loads(attributes(first)["gen_ai.input.messages"])
    # Exactly what the model was sent, in order: the system prefix, the agent's instructions, the request.
    assert [message["role"] for message in sent] == [message.role for message in model.requests[0].messages]
    assert [message["parts"][0]["content"] for message in sent] == [m.content for m in model.requests[0].messages]
    assert "You are a weather bot." in json.dumps(sent[:-1])
    assert sent[-1] == {"role": "user", "parts": [{"type": "text", "content": "Weather in Zanzibar?"}]}
    definitions = json.loads(attributes(first)["gen_ai.tool.definitions"])
    assert definitions[0]["type"] == "function" and definitions[0]["name"] == "get_weather"
    assert definitions[0]["parameters"]["properties"] == {"city": {"type": "string"}}
    assert json.loads(attributes(first)["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "I should look it up."},
                {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"city": "Zanzibar"}},
            ],
            "finish_reason": "tool_call",
        }
    ]

    assert json.loads(attributes(tool)["gen_ai.tool.call.arguments"]) == {"city": "Zanzibar"}
    assert attributes(tool)["gen_ai.tool.call.result"] == "22 C and sunny in Zanzibar"

    second_request = json.loads(attributes(last)["gen_ai.input.messages"])
    assert second_request[-1] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "c1", "response": "22 C and sunny in Zanzibar"}],
    }
    assert json.loads(attributes(last)["gen_ai.output.messages"])[0]["parts"] == [
        {"type": "text", "content": "It is sunny in Zanzibar today."}
    ]
    # The turn's input: what the log gained since its last answer (here the agent's instructions and the request).
    assert json.loads(attributes(turn)["gen_ai.input.messages"]) == [
        {"role": "system", "parts": [{"type": "text", "content": "You are a weather bot."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Zanzibar?"}]},
    ]
    assert json.loads(attributes(turn)["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "It is sunny in Zanzibar today."}],
            "finish_reason": "stop",
        }
    ]
    # Only the thinking text: a signature is the provider's opaque token, not content.
    assert "SIGNATURE-abc123" not in spans.text()


def test_uninstrument_stops_the_spans(spans: Spans) -> None:
    llm.model(ScriptedModel(["One."])).request("First").prompt()
    assert len(spans.all) == 2
    assert threadline.tracing.is_instrumented()
    threadline.uninstrument()
    assert not threadline.tracing.is_instrumented()
    llm.model(ScriptedModel(["Two."])).request("Second").prompt()
    assert len(spans.all) == 2


async def test_two_conversations_at_once_keep_their_trees_apart(spans: Spans) -> None:
    async def slow_lookup(city: str) -> str:
        """Look a city up, slowly."""
        await asyncio.sleep(0.02)
        return f"{city}: fine"

    def conversation(city: str) -> Conversation:
        script = [calls((f"{city}-{n}", "slow_lookup", {"city": city})) for n in (1, 2)]
        model = ScriptedModel([*script, f"{city} is fine."], name=f"openai:model-{city}")
        made = Conversation(config=ConversationConfig(model=model, tools=[slow_lookup]))
        made.add(UserMessage(content=f"How is {city}?"))
        return made

    async def drive(made: Conversation) -> None:
        async for _ in made.run():
            pass

    paris, rome = conversation("paris"), conversation("rome")
    await asyncio.gather(drive(paris), drive(rome))

    roots = spans.roots()
    assert sorted(attributes(root)["gen_ai.conversation.id"] for root in roots) == sorted([paris.id, rome.id])
    assert roots[0].context.trace_id != roots[1].context.trace_id
    for root in roots:
        city = "paris" if attributes(root)["gen_ai.conversation.id"] == paris.id else "rome"
        children = spans.children(root)
        assert [span.name for span in children] == [
            f"chat model-{city}",
            "execute_tool slow_lookup",
            f"chat model-{city}",
            "execute_tool slow_lookup",
            f"chat model-{city}",
        ]
        tools = [span for span in children if span.name.startswith("execute_tool")]
        assert [attributes(span)["gen_ai.tool.call.id"] for span in tools] == [f"{city}-1", f"{city}-2"]
    # The two turns did overlap in time: the trees were kept apart while both were open.
    first, second = roots
    assert second.start_time < first.end_time


def test_a_turn_inside_an_application_span_is_its_child(spans: Spans) -> None:
    tracer = spans.provider.get_tracer("the-application")
    with tracer.start_as_current_span("handle request") as outer:
        llm.model(ScriptedModel(["Done."])).request("Do it").prompt()
    turn = spans.one("invoke_agent threadline")
    assert turn.parent is not None and turn.parent.span_id == outer.get_span_context().span_id
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing of ours stays current after the turn


async def test_generate_text_is_one_turn(spans: Spans) -> None:
    model = ScriptedModel([calls(("g1", "get_weather", {"city": "Oslo"})), "Cold."], name="anthropic:claude-x")
    result = await generate_text(model=model, prompt="Weather in Oslo?", tools=[get_weather])
    assert result.text == "Cold."
    turn = spans.one("invoke_agent threadline")
    assert attributes(turn)["gen_ai.provider.name"] == "anthropic"
    assert "gen_ai.conversation.id" not in attributes(turn)  # not stored: no conversation to name
    assert spans.tree(turn) == [
        "invoke_agent threadline",
        [["chat claude-x", []], ["execute_tool get_weather", []], ["chat claude-x", []]],
    ]


async def test_generate_text_with_a_store_names_its_conversation(spans: Spans) -> None:
    store = open_store("memory://")
    try:
        result = await generate_text(model=ScriptedModel(["Hi."]), prompt="Hello", store=store)
    finally:
        store.close()
    assert attributes(spans.one("invoke_agent threadline"))["gen_ai.conversation.id"] == result.conversation_id


async def test_a_generate_text_cache_hit_is_a_turn_span_saying_so_with_no_model_call(spans: Spans) -> None:
    """Before: a cache hit left no span at all, so a trace showed nothing of the call."""
    cache = open_store("memory://")
    try:
        first = await generate_text(model=ScriptedModel(["Hi."], name="openai:gpt-x"), prompt="Hello", cache=cache)
        again = await generate_text(model=ScriptedModel([], name="openai:gpt-x"), prompt="Hello", cache=cache)
    finally:
        cache.close()
    assert again.cached and again.text == "Hi."
    ran, hit = spans.named("invoke_agent threadline")
    assert [span.name for span in spans.children(ran)] == ["chat gpt-x"] and spans.children(hit) == []
    assert "threadline.answer.reused" not in attributes(ran)
    assert attributes(hit) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "openai",
        "gen_ai.agent.name": "threadline",
        "gen_ai.request.model": "gpt-x",
        "threadline.answer.reused": "cache",
        "threadline.request_hash": first.request_hash,
    }
    assert hit.status.status_code == StatusCode.UNSET and hit.start_time <= hit.end_time  # type: ignore[operator]


async def test_identical_calls_in_flight_show_one_model_call_and_a_span_for_each_caller(spans: Spans) -> None:
    """Before: the callers that shared another's model call left no span."""
    release = asyncio.Event()

    async def slow(request: Any) -> str:
        await release.wait()
        return "Shared."

    model = ScriptedModel([slow], name="openai:gpt-x")
    calls_ = [asyncio.ensure_future(generate_text(model=model, prompt="Hello")) for _ in range(3)]
    await asyncio.sleep(0.05)
    release.set()
    results = await asyncio.gather(*calls_)
    assert [result.text for result in results] == ["Shared."] * 3 and len(model.requests) == 1
    turns = spans.named("invoke_agent threadline")
    reused = [span for span in turns if attributes(span).get("threadline.answer.reused") == "shared"]
    assert len(turns) == 3 and len(reused) == 2 and len(spans.named("chat gpt-x")) == 1
    assert all(spans.children(span) == [] for span in reused)


async def test_a_failed_shared_call_fails_the_span_of_each_caller(spans: Spans) -> None:
    release = asyncio.Event()

    async def down(request: Any) -> str:
        await release.wait()
        raise ModelError("the server is down", type="server")

    model = ScriptedModel([down], name="openai:gpt-x")
    calls_ = [asyncio.ensure_future(generate_text(model=model, prompt="Hello", max_retries=0)) for _ in range(2)]
    await asyncio.sleep(0.05)
    release.set()
    outcomes = await asyncio.gather(*calls_, return_exceptions=True)
    assert all(isinstance(outcome, ModelError) for outcome in outcomes)
    (shared,) = [s for s in spans.named("invoke_agent threadline") if "threadline.answer.reused" in attributes(s)]
    assert shared.status.status_code == StatusCode.ERROR and attributes(shared)["error.type"] == "server"


def test_a_run_is_a_workflow_span_over_the_turns_of_its_nodes(spans: Spans) -> None:
    model = ScriptedModel([calls(("r1", "get_weather", {"city": "Lima"})), "Lima is warm.", "Packed: shorts."])
    conversation = Conversation(config=ConversationConfig(model=model, tools=[get_weather]))
    run = Run(conversation, "Plan a trip to Lima", [Node("check", "Check the weather"), Node("pack", "Pack")])
    assert run.run().finished

    workflow = spans.one("invoke_workflow threadline.run")
    assert spans.roots() == [workflow]
    assert attributes(workflow) == {
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.workflow.name": "threadline.run",
        "threadline.run.id": run.run_id,
        "threadline.run.nodes": 2,
        "gen_ai.conversation.id": conversation.id,
    }
    assert spans.tree(workflow) == [
        "invoke_workflow threadline.run",
        [
            [
                "invoke_agent threadline",
                [["chat scripted", []], ["execute_tool get_weather", []], ["chat scripted", []]],
            ],
            ["invoke_agent threadline", [["chat scripted", []]]],
        ],
    ]
    check, pack = spans.children(workflow)
    assert attributes(check)["threadline.run.node_id"] == "check"
    assert attributes(pack)["threadline.run.node_id"] == "pack"
    assert attributes(pack)["threadline.run.id"] == run.run_id


def test_an_agent_tools_sub_conversation_is_a_child_of_the_tool_span(spans: Spans) -> None:
    researcher = llm.model(ScriptedModel([calls(("s1", "get_weather", {"city": "Quito"})), "Quito: 18 C."]))
    research = agent_tool(researcher, "research", "Research a question.")
    parent = ScriptedModel([calls(("p1", "research", {"task": "Weather in Quito?"})), "It is 18 C in Quito."])
    answer = llm.model(parent).tools(research).request("Should I pack a coat for Quito?").prompt()
    assert answer == "It is 18 C in Quito."

    outer = spans.roots()
    assert len(outer) == 1
    assert spans.tree(outer[0]) == [
        "invoke_agent threadline",
        [
            ["chat scripted", []],
            [
                "execute_tool research",
                [
                    [
                        "invoke_agent threadline",
                        [["chat scripted", []], ["execute_tool get_weather", []], ["chat scripted", []]],
                    ]
                ],
            ],
            ["chat scripted", []],
        ],
    ]
    tool = spans.one("execute_tool research")
    (sub_turn,) = spans.children(tool)
    assert attributes(sub_turn)["gen_ai.conversation.id"] != attributes(outer[0])["gen_ai.conversation.id"]


@pytest.mark.parametrize("content", [False, True])
def test_reasoning_tokens_are_left_out_when_the_model_reports_none(spans: Spans, content: bool) -> None:
    spans.instrument(include_content=content)
    llm.model(ScriptedModel(["No usage reported."])).request("Hi").prompt()
    for span in spans.all:
        assert not any(key.startswith("gen_ai.usage.") for key in attributes(span))


def test_a_run_whose_node_fails_ends_its_workflow_span_in_error(spans: Spans) -> None:
    conversation = Conversation(config=ConversationConfig(model=ScriptedModel([ModelError("down", type="server")])))
    run = Run(conversation, "Plan a trip", [Node("check", "Check the weather"), Node("pack", "Pack")])
    with pytest.raises(ModelError):
        run.run()
    workflow = spans.one("invoke_workflow threadline.run")
    assert workflow.status.status_code == StatusCode.ERROR
    assert attributes(workflow)["error.type"] == "server"
    (turn,) = spans.children(workflow)  # the second node never started
    assert attributes(turn)["error.type"] == "server"


async def test_a_run_left_after_its_first_message_ends_its_workflow_span_without_error(spans: Spans) -> None:
    conversation = Conversation(config=ConversationConfig(model=ScriptedModel(["Done."])))
    run = Run(conversation, "Plan a trip", [Node("check", "Check the weather")])
    steps = run.iterate()
    async for _ in steps:
        break  # the caller stops reading
    await steps.aclose()
    workflow = spans.one("invoke_workflow threadline.run")
    assert workflow.status.status_code == StatusCode.UNSET


async def test_a_model_on_openais_responses_api_is_provider_openai_on_the_responses_api(spans: Spans) -> None:
    with FakeResponses() as server:
        server.reply("Hi there.")
        model = OpenAIResponsesModel("gpt-4.1-mini", base_url=server.base_url, api_key="sk-test-1234567890")
        try:
            assert await llm.model(model).request("Hello").prompt_async() == "Hi there."
        finally:
            await model.aclose()
    turn = spans.one("invoke_agent threadline")
    chat = spans.one("chat gpt-4.1-mini")
    for span in (turn, chat):
        # The conventions' name of the provider (gen_ai.provider.name has no value per API); the API is ours.
        assert attributes(span)["gen_ai.provider.name"] == "openai"
        assert attributes(span)["threadline.api"] == "responses"
        assert attributes(span)["gen_ai.request.model"] == "gpt-4.1-mini"
    assert attributes(chat)["gen_ai.operation.name"] == "chat"
