"""`PromptBuilder` and `threadline.llm` (docs/architecture.md#conversations-and-the-builder): immutability, deltas,
execution methods, settings."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from typing import Any

import pydantic
import pytest

from threadline import (
    AssistantMessage,
    Attachment,
    Conversation,
    ConversationConfig,
    ModelError,
    OutputValidationError,
    PromptBuilder,
    SystemMessage,
    ToolMessage,
    UserError,
    UserMessage,
    llm,
)
from threadline.builder import ROUND_BREAK
from threadline.testing import ScriptedModel

from ._support import call, calls, roles


def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"22 C in {city}"


def get_time(zone: str) -> str:
    """Time in a zone."""
    return "12:00"


class City(pydantic.BaseModel):
    name: str
    population: int


@dataclasses.dataclass
class Forecast:
    city: str
    high: int


# -- immutability and deltas ----------------------------------------------------------------------------------------
def test_llm_is_the_empty_builder() -> None:
    assert isinstance(llm, PromptBuilder)
    assert llm.delta_messages == ()
    assert llm.delta_config == {}
    assert llm.conversation is None


def test_every_method_returns_a_new_builder_and_leaves_the_old_one_unchanged() -> None:
    model = ScriptedModel([])
    base = llm.agent("You are terse.")
    steps: list[tuple[str, Any]] = [
        ("agent", lambda b: b.agent("more rules")),
        ("document", lambda b: b.document("a document")),
        ("request", lambda b: b.request("a question")),
        ("assistant", lambda b: b.assistant("an example answer")),
        ("provider", lambda b: b.provider("openai")),
        ("model", lambda b: b.model(model)),
        ("tools", lambda b: b.tools(get_weather)),
        ("tool_choice", lambda b: b.tool_choice("required")),
        ("max_tool_rounds", lambda b: b.max_tool_rounds(3)),
        ("mode", lambda b: b.mode("agent")),
        ("persona", lambda b: b.persona("a pirate")),
        ("conversation_id", lambda b: b.conversation_id("conv-1")),
    ]
    for name, step in steps:
        messages_before, config_before = base.delta_messages, base.delta_config
        derived = step(base)
        assert isinstance(derived, PromptBuilder), name
        assert derived is not base, name
        assert base.delta_messages == messages_before, name
        assert base.delta_config == config_before, name
        assert len(base.delta_messages) == 1 and base.delta_config == {}, name
    assert llm.delta_messages == () and llm.delta_config == {}


def test_branches_of_one_builder_are_independent() -> None:
    base = llm.agent("rules").tools(get_weather)
    left = base.request("left?").tools(get_time)
    right = base.request("right?").max_tool_rounds(1)
    assert [m.content for m in left.delta_messages] == ["rules", "left?"]
    assert [m.content for m in right.delta_messages] == ["rules", "right?"]
    assert [getattr(t, "name", t) for t in left.delta_config["tools"]] == ["get_weather", "get_time"]
    assert [getattr(t, "name", t) for t in right.delta_config["tools"]] == ["get_weather"]
    assert "max_tool_rounds" not in left.delta_config
    assert right.delta_config["max_tool_rounds"] == 1
    assert [getattr(t, "name", t) for t in base.delta_config["tools"]] == ["get_weather"]


def test_message_deltas_have_the_right_kinds() -> None:
    image = Attachment.image(b"\x89PNG\r\n\x1a\nxx")
    builder = llm.agent("sys").document("doc").request("q", attachments=[image]).assistant("a")
    kinds = [(type(m).__name__, m.content) for m in builder.delta_messages]
    assert kinds == [("SystemMessage", "sys"), ("UserMessage", "doc"), ("UserMessage", "q"), ("AssistantMessage", "a")]
    assert builder.delta_messages[2].attachments == [image]  # type: ignore[union-attr]


def test_old_context_method_warns_and_adds_the_same_message() -> None:
    with pytest.warns(DeprecationWarning, match=r"PromptBuilder.document\(\)"):
        old = llm.context("doc")
    new = llm.document("doc")
    assert [(type(m), m.content) for m in old.delta_messages] == [(type(m), m.content) for m in new.delta_messages]


def test_config_deltas_record_each_setting() -> None:
    model = ScriptedModel([])
    builder = (
        llm.provider("anthropic")
        .tool_choice("get_weather")
        .max_tool_rounds(4)
        .mode("agent")
        .persona("a pirate")
        .tools(get_weather)
    )
    config = builder.delta_config
    assert config["provider"] == "anthropic" and config["model"] is None
    assert (config["tool_choice"], config["max_tool_rounds"], config["mode"], config["persona"]) == (
        "get_weather",
        4,
        "agent",
        "a pirate",
    )
    assert [t.name for t in config["tools"]] == ["get_weather"]
    assert builder.model(model).delta_config["model"] is model
    assert llm.model("openai:gpt-4o").delta_config["model"] == "openai:gpt-4o"


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: llm.agent(3), TypeError),
        (lambda: llm.request(None), TypeError),
        (lambda: llm.request("q", attachments=["file.png"]), TypeError),
        (lambda: llm.model(3), TypeError),
        (lambda: llm.tools(42), UserError),
        (lambda: llm.tool_choice(""), UserError),
        (lambda: llm.max_tool_rounds(-1), UserError),
        (lambda: llm.max_tool_rounds(1.5), UserError),
        (lambda: llm.mode("dance"), UserError),
        (lambda: llm.conversation_id(""), UserError),
    ],
)
def test_bad_builder_arguments_fail_at_once(make: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        make()


# -- prompt_conversation and continuation -------------------------------------------------------------------------
def test_prompt_conversation_applies_deltas_to_a_new_conversation() -> None:
    model = ScriptedModel([])
    conversation = (
        llm.agent("rules").model(model).tools(get_weather).max_tool_rounds(2).request("q").prompt_conversation()
    )
    assert isinstance(conversation, Conversation)
    assert roles(conversation.messages) == ["SystemMessage", "UserMessage"]
    assert conversation.config.model is model
    assert conversation.config.max_tool_rounds == 2
    assert [getattr(t, "name", t) for t in conversation.config.tools] == ["get_weather"]
    assert model.requests == []  # armed, not run


def test_continuation_refers_to_the_same_conversation_and_adds_to_it() -> None:
    model = ScriptedModel(["Paris.", "Rome."])
    conversation = llm.model(model).request("Capital of France?").prompt_conversation()
    conversation.continuation.prompt()
    builder = conversation.continuation
    assert builder.conversation is conversation
    follow = builder.request("And Italy?").tools(get_time).prompt_conversation()
    assert follow is conversation
    follow.continuation.prompt()
    assert [m.content for m in conversation.messages] == ["Capital of France?", "Paris.", "And Italy?", "Rome."]
    assert [getattr(t, "name", t) for t in conversation.config.tools] == ["get_time"]
    # The second request carried the whole conversation.
    assert [m.content for m in model.requests[1].messages[1:]] == ["Capital of France?", "Paris.", "And Italy?"]


def test_continuation_tools_are_added_to_the_conversations_tools() -> None:
    model = ScriptedModel(["a", "b"])
    conversation = llm.model(model).tools(get_weather).request("1").prompt_conversation()
    conversation.continuation.prompt()
    conversation.continuation.tools(get_time).request("2").prompt()
    assert model.requests[0].tool_names == ["get_weather"]
    assert model.requests[1].tool_names == ["get_weather", "get_time"]


def test_config_deltas_change_the_referenced_conversation() -> None:
    first, second = ScriptedModel(["from first"]), ScriptedModel(["from second"])
    conversation = Conversation(config=ConversationConfig(model=first))
    conversation.continuation.request("a").prompt()
    conversation.continuation.model(second).request("b").prompt()
    assert conversation.config.model is second
    assert len(first.requests) == 1 and len(second.requests) == 1
    assert [m.content for m in second.requests[0].messages[1:]] == ["a", "from first", "b"]


def test_a_builder_run_twice_gives_each_message_its_own_id() -> None:
    model = ScriptedModel(["one", "two", "three"])
    base = llm.model(model).agent("rules").request("go")
    first = base.prompt_conversation()
    second = base.prompt_conversation()
    assert first is not second
    first_ids = {m.id for m in first.messages}
    assert not first_ids & {m.id for m in second.messages}
    again = first.continuation.request("once more")
    again.prompt()
    again.prompt()
    ids = [m.id for m in first.messages]
    assert len(ids) == len(set(ids))
    assert ids == sorted(ids)  # the log's order and the ids' order agree
    first.messages.validate()


def test_conversation_id_names_a_new_conversation() -> None:
    conversation = llm.conversation_id("conv-42").request("x").prompt_conversation()
    assert conversation.id == "conv-42"
    with pytest.raises(UserError, match="cannot change the id"):
        conversation.continuation.conversation_id("other").prompt_conversation()


def test_mode_and_persona_shape_the_system_prefix_and_tag_messages() -> None:
    model = ScriptedModel(["chat answer", "agent answer"])
    conversation = llm.model(model).persona("You are a pirate.").request("hi").prompt_conversation()
    conversation.continuation.prompt()
    chat_prefix = model.requests[0].messages[0]
    assert isinstance(chat_prefix, SystemMessage)
    assert "active: chat" in chat_prefix.content
    assert "pirate" not in chat_prefix.content  # persona only in agent and run modes
    conversation.continuation.mode("agent").request("plan").prompt()
    agent_prefix = model.requests[1].messages[0]
    assert "active: agent" in agent_prefix.content and "You are a pirate." in agent_prefix.content
    assert conversation.messages[-1].meta.mode == "agent"
    # The log is never reset by a mode switch.
    assert [m.content for m in conversation.messages] == ["hi", "chat answer", "plan", "agent answer"]


def test_provider_selects_that_providers_default_model_and_model_overrides_it() -> None:
    from threadline.models import DEFAULT_MODELS

    conversation = llm.provider("anthropic").request("x").prompt_conversation()
    assert conversation.host.resolve_model().name == DEFAULT_MODELS["anthropic"]
    scripted = ScriptedModel([])
    assert conversation.continuation.model(scripted).prompt_conversation().host.resolve_model() is scripted
    # .provider() after .model() switches back to the provider's default model.
    switched = conversation.continuation.provider("openai").prompt_conversation()
    assert switched.host.resolve_model().name == DEFAULT_MODELS["openai"]


def test_unknown_provider_and_model_names_are_user_errors() -> None:
    with pytest.raises(UserError, match="unknown provider"):
        llm.provider("nope").request("x").prompt()
    with pytest.raises(UserError, match="unknown model"):
        llm.model("nope:thing").request("x").prompt()


# -- prompt, prompt_async ----------------------------------------------------------------------------------------
def test_prompt_outside_an_event_loop_returns_the_text() -> None:
    model = ScriptedModel([calls(call("get_weather", {"city": "Paris"})), "It is 22 C."])
    text = llm.model(model).tools(get_weather).request("Weather?").prompt()
    assert text == "It is 22 C."
    assert isinstance(text, str)


async def test_prompt_inside_an_event_loop_returns_an_awaitable() -> None:
    model = ScriptedModel(["inside"])
    pending = llm.model(model).request("x").prompt()
    assert inspect.isawaitable(pending)
    assert await pending == "inside"


async def test_prompt_async_is_always_awaitable() -> None:
    model = ScriptedModel(["async text"])
    assert await llm.model(model).request("x").prompt_async() == "async text"


def test_prompt_async_from_sync_code_via_asyncio_run() -> None:
    model = ScriptedModel(["via run"])
    assert asyncio.run(llm.model(model).request("x").prompt_async()) == "via run"


async def drain(conversation: Conversation) -> None:
    async for _ in conversation:
        pass


# -- settings ------------------------------------------------------------------------------------------------------
def test_settings_and_provider_prefixed_extras_reach_the_request() -> None:
    model = ScriptedModel(["a", "b"])
    conversation = (
        llm.model(model)
        .request("x")
        .prompt_conversation(
            stream=False,
            max_tokens=5,
            temperature=0.2,
            timeout=3.0,
            max_retries=1,
            openai_seed=7,
            anthropic_top_k=3,
            local_top_k=40,
        )
    )
    asyncio.run(drain(conversation))
    settings = model.requests[0].settings
    assert (settings.stream, settings.max_tokens, settings.temperature, settings.timeout, settings.max_retries) == (
        False,
        5,
        0.2,
        3.0,
        1,
    )
    assert settings.extras == {"openai_seed": 7, "anthropic_top_k": 3, "local_top_k": 40}
    assert settings.extras_for("openai") == {"seed": 7}
    # Prompt settings are for one turn; the next turn uses the conversation's config.
    conversation.continuation.request("y").prompt()
    later = model.requests[1].settings
    assert (later.stream, later.max_tokens, later.extras) == (True, None, {})


def test_config_settings_are_the_default_of_every_turn() -> None:
    model = ScriptedModel(["a"])
    config = ConversationConfig(model=model, temperature=0.5, max_tokens=9, extras={"openai_seed": 1})
    Conversation(config=config).continuation.request("x").prompt(openai_user="u")
    settings = model.requests[0].settings
    assert (settings.temperature, settings.max_tokens) == (0.5, 9)
    assert settings.extras == {"openai_seed": 1, "openai_user": "u"}


def test_unknown_prompt_settings_are_user_errors_and_change_nothing() -> None:
    model = ScriptedModel(["never"])
    conversation = Conversation(config=ConversationConfig(model=model))
    builder = conversation.continuation.request("x").max_tool_rounds(1)
    for run in (
        lambda: builder.prompt(temprature=0.2),
        lambda: builder.prompt_conversation(seed=1),
        lambda: list(builder.stream(colour="red")),
        lambda: builder.prompt_for_type(City, foo=1),
    ):
        with pytest.raises(UserError, match="unknown setting"):
            run()
    assert len(conversation.messages) == 0
    assert conversation.config.max_tool_rounds == 10
    assert model.requests == []


@pytest.mark.parametrize(
    ("setting", "value", "says"),
    [
        ("tool_timeout", -1, "tool_timeout must be a number of seconds > 0"),
        ("tool_timeout", 0, "tool_timeout must be a number of seconds > 0"),
        ("timeout", "30", "timeout must be a number of seconds > 0"),
        ("temperature", "hot", "temperature must be a number >= 0"),
        ("max_tokens", -1, "max_tokens must be a positive integer"),
        ("max_tokens", 1.5, "max_tokens must be a positive integer"),
        ("max_retries", True, "max_retries must be an integer >= 0"),
        ("stream", "yes", "stream must be True or False"),
    ],
)
def test_a_setting_with_a_value_it_cannot_take_is_a_user_error_and_changes_nothing(
    setting: str, value: object, says: str
) -> None:
    """Before, such values were taken: ``tool_timeout=-1`` started every tool and reported each as "did not finish
    in -1 s"; ``temperature="hot"`` went to the provider."""
    model = ScriptedModel(["never"])
    conversation = Conversation(config=ConversationConfig(model=model))
    builder = conversation.continuation.request("x")
    with pytest.raises(UserError, match=says):
        builder.prompt(**{setting: value})
    assert len(conversation.messages) == 0 and model.requests == []


def test_a_tool_choice_naming_no_offered_tool_is_refused_for_any_model() -> None:
    """The HTTP and local adapters refused it; a model of one's own (here `ScriptedModel`) was sent it as is."""

    def get_weather(city: str) -> str:
        """Weather."""
        return "sunny"

    model = ScriptedModel(["never"])
    with pytest.raises(UserError, match=r"tool_choice names 'get_time', which is not offered \(offered: get_weather\)"):
        llm.model(model).tools(get_weather).tool_choice("get_time").request("x").prompt()
    assert model.requests == []


@pytest.mark.parametrize("retries", [-1, "x", 1.0])
def test_prompt_for_type_refuses_retries_that_are_no_count(retries: object) -> None:
    """Before: ``AssertionError('unreachable')`` for -1, after recording the request; a TypeError for "x"."""
    model = ScriptedModel(["never"])
    conversation = Conversation(config=ConversationConfig(model=model))
    with pytest.raises(UserError, match="retries must be an integer >= 0"):
        conversation.continuation.request("x").prompt_for_type(City, retries=retries)  # type: ignore[arg-type]
    assert len(conversation.messages) == 0 and model.requests == []


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("max_tool_rounds", "3", "max_tool_rounds must be an integer >= 0"),
        ("tools", 5, "tools must be a list of tools"),
        ("model", 5, "model must be a model name or a Model"),
        ("tool_timeout", 0, "tool_timeout must be a number of seconds > 0"),
        ("busy_timeout", -1, "busy_timeout must be a number of seconds > 0"),
    ],
)
def test_a_config_value_a_field_cannot_take_is_refused_where_it_is_set(field: str, value: object, says: str) -> None:
    """Before, ``ConversationConfig(max_tool_rounds="3")`` failed at the next turn with "'>=' not supported between
    instances of 'int' and 'str'", and ``apply_config_deltas({"tools": 5})`` was taken silently."""
    with pytest.raises(UserError, match=says):
        ConversationConfig(**{field: value})
    conversation = Conversation()
    with pytest.raises(ValueError, match=says):
        conversation.apply_config_deltas({"persona": "kept?", field: value})
    assert conversation.config.persona is None  # nothing was changed


def test_apply_config_deltas() -> None:
    conversation = Conversation()
    conversation.apply_config_deltas({"max_tool_rounds": 3, "persona": "p", "temperature": 0.1})
    assert (conversation.config.max_tool_rounds, conversation.config.persona) == (3, "p")
    with pytest.raises(ValueError, match="Unknown config key: 'preferred_model'"):
        conversation.apply_config_deltas({"max_tool_rounds": 5, "preferred_model": "x"})
    assert conversation.config.max_tool_rounds == 3  # nothing changed


# -- prompt_for_type ------------------------------------------------------------------------------------------------
def test_prompt_for_type_with_a_pydantic_model() -> None:
    model = ScriptedModel(['{"name": "Paris", "population": 2100000}'])
    city = llm.model(model).request("Biggest French city?").prompt_for_type(City)
    assert city == City(name="Paris", population=2100000)
    request = model.requests[0]
    assert request.response_format is not None
    assert request.response_format.name == "City"
    assert request.response_format.schema["required"] == ["name", "population"]


def test_prompt_for_type_with_a_dataclass_and_a_fenced_answer() -> None:
    model = ScriptedModel(['```json\n{"city": "Oslo", "high": -2}\n```'])
    forecast = llm.model(model).request("Forecast?").prompt_for_type(Forecast)
    assert forecast == Forecast(city="Oslo", high=-2)


def test_prompt_for_type_with_a_non_object_type_wraps_it() -> None:
    model = ScriptedModel(['{"result": [1, 2, 3]}'])
    numbers = llm.model(model).request("Three numbers").prompt_for_type(list[int])
    assert numbers == [1, 2, 3]
    schema = model.requests[0].response_format.schema  # type: ignore[union-attr]
    assert schema["type"] == "object" and schema["required"] == ["result"]


def test_prompt_for_type_retries_invalid_output_with_the_errors() -> None:
    model = ScriptedModel(['{"name": "Paris", "population": "lots"}', '{"name": "Paris", "population": 2100000}'])
    conversation = llm.model(model).request("City?").prompt_conversation()
    city = conversation.continuation.prompt_for_type(City)
    assert city.population == 2100000
    assert len(model.requests) == 2
    feedback = model.requests[1].messages[-1]
    assert isinstance(feedback, UserMessage)
    assert "population" in feedback.content and "integer" in feedback.content
    conversation.messages.validate()


def test_prompt_for_type_gives_up_with_output_validation_error() -> None:
    model = ScriptedModel(["not json", "still not json", "never asked"])
    with pytest.raises(OutputValidationError, match="not a valid City") as info:
        llm.model(model).request("City?").prompt_for_type(City)
    assert info.value.text == "still not json"
    assert len(model.requests) == 2
    assert model.remaining == 1


def test_prompt_for_type_retries_setting() -> None:
    model = ScriptedModel(["x", "y", "z", '{"name": "A", "population": 1}'])
    assert llm.model(model).request("?").prompt_for_type(City, retries=3) == City(name="A", population=1)
    model = ScriptedModel(["x"])
    with pytest.raises(OutputValidationError):
        llm.model(model).request("?").prompt_for_type(City, retries=0)


async def test_prompt_for_type_inside_a_loop_is_awaitable() -> None:
    model = ScriptedModel(['{"city": "Rome", "high": 30}', '{"city": "Nice", "high": 25}'])
    pending = llm.model(model).request("?").prompt_for_type(Forecast)
    assert inspect.isawaitable(pending)
    assert await pending == Forecast(city="Rome", high=30)
    assert await llm.model(model).request("?").prompt_for_type_async(Forecast) == Forecast(city="Nice", high=25)


def test_prompt_for_type_runs_tools_first() -> None:
    model = ScriptedModel([calls(call("get_weather", {"city": "Oslo"})), '{"city": "Oslo", "high": 22}'])
    forecast = llm.model(model).tools(get_weather).request("?").prompt_for_type(Forecast)
    assert forecast == Forecast(city="Oslo", high=22)
    assert model.requests[1].messages[-1].content == "22 C in Oslo"


# -- stream ---------------------------------------------------------------------------------------------------------
ANSWER = "Paris is the capital of France and its largest city."


def test_stream_with_a_sync_for_yields_text_deltas() -> None:
    model = ScriptedModel([ANSWER])
    stream = llm.model(model).request("Capital?").stream()
    pieces = list(stream)
    assert len(pieces) > 1
    assert "".join(pieces) == ANSWER
    assert stream.conversation is not None
    assert stream.conversation.text == ANSWER


async def test_stream_with_async_for_yields_text_deltas() -> None:
    model = ScriptedModel([ANSWER])
    pieces = [piece async for piece in llm.model(model).request("Capital?").stream()]
    assert len(pieces) > 1 and "".join(pieces) == ANSWER


async def test_sync_for_over_a_stream_inside_an_event_loop_says_to_use_async_for() -> None:
    model = ScriptedModel([ANSWER])
    stream = llm.model(model).request("Capital?").stream()
    with pytest.raises(RuntimeError, match="use `async for`"):
        for _ in stream:
            pass
    assert model.requests == []


def test_stream_run_again_from_sync_code_after_an_async_run() -> None:
    model = ScriptedModel([ANSWER, ANSWER])
    assert "".join(asyncio.run(_collect(llm.model(model).request("a").stream()))) == ANSWER
    assert "".join(llm.model(model).request("b").stream()) == ANSWER


async def _collect(stream: Any) -> list[str]:
    return [piece async for piece in stream]


def test_stream_runs_tool_rounds_and_streams_the_answer() -> None:
    model = ScriptedModel([calls(call("get_weather", {"city": "Paris"})), ANSWER])
    stream = llm.model(model).tools(get_weather).request("?").stream()
    assert "".join(stream) == ANSWER
    assert stream.conversation is not None
    assert roles(stream.conversation.messages) == ["UserMessage", "AssistantMessage", "ToolMessage", "AssistantMessage"]


def test_stream_yields_each_rounds_text_as_it_comes_with_a_break_after_a_tool_round() -> None:
    """r11_stream.py: a model that talks before calling a tool. Its words stream too (whether a round ends in tool
    calls is only known when it ends, and holding text back would stop the answer from streaming), followed by a
    blank line; the final answer alone is the conversation's text."""
    preamble = "Let me check the weather tool first."
    model = ScriptedModel(
        [
            calls(call("get_weather", {"city": "Paris"}), content=preamble),
            calls(call("get_weather", {"city": "Rome"})),  # a tool round without text adds no second break
            ANSWER,
        ]
    )
    stream = llm.model(model).tools(get_weather).request("?").stream()
    pieces = list(stream)
    assert "".join(pieces) == preamble + ROUND_BREAK + ANSWER
    assert pieces.count(ROUND_BREAK) == 1
    assert len(pieces[pieces.index(ROUND_BREAK) + 1 :]) > 1  # the answer itself still streams in pieces
    assert stream.conversation is not None
    assert stream.conversation.text == ANSWER


def test_stream_raises_the_model_error_after_the_partial_text() -> None:
    model = ScriptedModel([ModelError("cut", type="server", partial="Paris is the")])
    pieces: list[str] = []
    with pytest.raises(ModelError, match="cut"):
        for piece in llm.model(model).request("?").stream():
            pieces.append(piece)
    assert "".join(pieces) == "Paris is the"


async def test_async_iteration_order_through_the_builder() -> None:
    model = ScriptedModel([calls(call("get_weather", {"city": "A"}), call("get_time", {"zone": "B"})), "done"])
    conversation = llm.model(model).tools(get_weather, get_time).request("go").prompt_conversation()
    new = [m async for m in conversation]
    assert [type(m) for m in new] == [AssistantMessage, ToolMessage, ToolMessage, AssistantMessage]
    assert [(m.tool_name, m.content) for m in new if isinstance(m, ToolMessage)] == [
        ("get_weather", "22 C in A"),
        ("get_time", "12:00"),
    ]
    assert new == list(conversation.messages)[1:]
