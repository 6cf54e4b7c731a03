"""The turn engine (docs/architecture.md#how-a-turn-runs): streaming, tool rounds, concurrency, round limits,
tool_choice, persistence points, failures and the repair of calls a crash left unanswered. Every scenario ends with a
valid log."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest

from threadline import (
    AssistantMessage,
    CapabilityError,
    Conversation,
    ConversationConfig,
    Cost,
    LLMError,
    Model,
    ModelCapabilities,
    ModelError,
    ModelRequest,
    ModelResponse,
    TextDelta,
    ToolMessage,
    Usage,
    UserMessage,
    llm,
    user,
)
from threadline.pricing.prices import prices_version
from threadline.testing import ScriptedModel, ScriptedRequest

from ._support import call, calls, roles


def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"22 C in {city}"


async def run(conversation: Conversation) -> list[Any]:
    return [message async for message in conversation]


# -- rounds -------------------------------------------------------------------------------------------------------
async def test_two_tool_rounds_then_an_answer() -> None:
    model = ScriptedModel(
        [
            calls(call("get_weather", {"city": "Paris"}, id="c1")),
            calls(call("get_weather", {"city": "Rome"}, id="c2"), content="Now Rome."),
            "Paris 22 C, Rome 22 C.",
        ]
    )
    conversation = llm.model(model).tools(get_weather).request("Weather in Paris and Rome?").prompt_conversation()
    new = await run(conversation)
    assert roles(new) == ["AssistantMessage", "ToolMessage", "AssistantMessage", "ToolMessage", "AssistantMessage"]
    assert [m.content for m in new if isinstance(m, ToolMessage)] == ["22 C in Paris", "22 C in Rome"]
    assert conversation.text == "Paris 22 C, Rome 22 C."
    assert conversation.last_turn is not None
    assert (conversation.last_turn.stop_reason, conversation.last_turn.rounds) == ("end", 2)
    assert conversation.last_turn.new_messages == new
    assert len(model.requests) == 3
    # Each request carries the log so far: the third one ends with the second tool result.
    third = model.requests[2].messages
    assert [type(m).__name__ for m in third[-4:]] == [
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
        "ToolMessage",
    ]
    assert third[-1].content == "22 C in Rome"
    assert all(r.tools and r.tools[0].name == "get_weather" for r in model.requests)
    conversation.messages.validate()


async def test_streamed_answer_is_assembled_and_recorded_once() -> None:
    answer = "The capital of France is Paris, a city on the Seine."
    model = ScriptedModel([answer])
    pieces: list[str] = []
    conversation = llm.model(model).request("Capital?").prompt_conversation()
    async for _ in conversation.run(on_text=pieces.append):
        pass
    assert len(pieces) > 1
    assert "".join(pieces) == answer
    assert roles(conversation.messages) == ["UserMessage", "AssistantMessage"]
    assert conversation.messages[-1].content == answer
    assert conversation.messages[-1].model == "scripted"  # type: ignore[union-attr]


async def test_usage_of_a_turn_is_summed() -> None:
    model = ScriptedModel(
        [calls(call("get_weather", {"city": "Paris"})), "done"],
        usage=Usage(input_tokens=10, output_tokens=2),
        name="openai:gpt-4o-mini",
    )
    conversation = llm.model(model).tools(get_weather).request("go").prompt_conversation()
    await run(conversation)
    assert conversation.last_turn is not None
    # gpt-4o-mini: $0.15 per million input tokens, $0.60 per million output tokens
    one = Cost(usd=Decimal("0.0000027"), prices=prices_version())
    assert conversation.messages[-1].usage == Usage(input_tokens=10, output_tokens=2, cost=one)  # type: ignore[union-attr]
    assert conversation.last_turn.usage == Usage(input_tokens=20, output_tokens=4, cost=one + one)
    assert conversation.cost == one + one


# -- concurrency and order ----------------------------------------------------------------------------------------
async def test_several_calls_run_concurrently_and_results_keep_call_order() -> None:
    first_started, second_started = asyncio.Event(), asyncio.Event()

    async def first() -> str:
        first_started.set()
        # Only finishes if `second` runs at the same time; run one after the other, this times out.
        await asyncio.wait_for(second_started.wait(), 5)
        await asyncio.sleep(0.05)  # finish after `second`, so arrival order differs from call order
        return "first done"

    async def second() -> str:
        second_started.set()
        await asyncio.wait_for(first_started.wait(), 5)
        return "second done"

    model = ScriptedModel([calls(call("first", id="a"), call("second", id="b")), "both done"])
    conversation = llm.model(model).tools(first, second).request("go").prompt_conversation()
    new = await run(conversation)
    results = [m for m in new if isinstance(m, ToolMessage)]
    assert [(r.tool_call_id, r.content, r.is_error) for r in results] == [
        ("a", "first done", False),
        ("b", "second done", False),
    ]
    conversation.messages.validate()


async def test_sync_tools_run_concurrently_in_worker_threads() -> None:
    import threading

    barrier = threading.Barrier(2, timeout=5)

    def left() -> str:
        barrier.wait()  # both threads must be inside their tool at once
        return "left"

    def right() -> str:
        barrier.wait()
        return "right"

    model = ScriptedModel([calls(call("left"), call("right")), "ok"])
    conversation = llm.model(model).tools(left, right).request("go").prompt_conversation()
    new = await run(conversation)
    assert [(m.content, m.is_error) for m in new if isinstance(m, ToolMessage)] == [("left", False), ("right", False)]


async def test_each_result_is_recorded_as_soon_as_it_and_earlier_ones_are_done() -> None:
    holder: dict[str, Conversation] = {}

    async def quick() -> str:
        return "quick result"

    async def watcher() -> str:
        # Still running while `quick` has finished: its result must already be in the log.
        conversation = holder["c"]
        for _ in range(500):
            if any(isinstance(m, ToolMessage) and m.content == "quick result" for m in conversation.messages):
                return "saw quick"
            await asyncio.sleep(0.01)
        return "did not see quick"

    model = ScriptedModel([calls(call("quick"), call("watcher")), "ok"])
    conversation = llm.model(model).tools(quick, watcher).request("go").prompt_conversation()
    holder["c"] = conversation
    await run(conversation)
    assert [m.content for m in conversation.messages if isinstance(m, ToolMessage)] == ["quick result", "saw quick"]


async def test_assistant_message_is_in_the_log_before_its_tools_run() -> None:
    seen: list[Any] = []
    holder: dict[str, Conversation] = {}

    def inspect_log() -> str:
        log = holder["c"].messages
        seen.append((type(log[-1]).__name__, [c.id for c in log[-1].tool_calls], roles(log)))  # type: ignore[union-attr]
        return "looked"

    model = ScriptedModel([calls(call("inspect_log", id="c1")), "fine"])
    conversation = llm.model(model).tools(inspect_log).request("look").prompt_conversation()
    holder["c"] = conversation
    await run(conversation)
    assert seen == [("AssistantMessage", ["c1"], ["UserMessage", "AssistantMessage"])]


async def test_log_seen_by_the_model_callable_is_the_recorded_log() -> None:
    holder: dict[str, Conversation] = {}
    snapshots: list[list[str]] = []

    def answer(request: ScriptedRequest) -> Any:
        snapshots.append(roles(holder["c"].messages))
        if len(snapshots) == 1:
            return calls(call("get_weather", {"city": "Oslo"}))
        return "cold"

    model = ScriptedModel([answer, answer])
    conversation = llm.model(model).tools(get_weather).request("Oslo?").prompt_conversation()
    holder["c"] = conversation
    await run(conversation)
    # Before the first call: the user's message; before the second: the tool-call message and its result.
    assert snapshots == [["UserMessage"], ["UserMessage", "AssistantMessage", "ToolMessage"]]


async def test_async_iteration_yields_exactly_the_new_log_entries_in_order() -> None:
    model = ScriptedModel([calls(call("get_weather", {"city": "A"}), call("get_weather", {"city": "B"})), "done"])
    conversation = llm.model(model).agent("be brief").tools(get_weather).request("go").prompt_conversation()
    before = len(conversation.messages)
    new = await run(conversation)
    assert new == list(conversation.messages)[before:]
    assert roles(new) == ["AssistantMessage", "ToolMessage", "ToolMessage", "AssistantMessage"]


# -- round limit and tool_choice ----------------------------------------------------------------------------------
def _always_calls(request: ScriptedRequest) -> AssistantMessage:
    if not request.tools:
        return AssistantMessage(content="Giving up on tools: 22 C.")
    return calls(call("get_weather", {"city": "Paris"}))


async def test_max_tool_rounds_then_a_final_request_without_tools() -> None:
    model = ScriptedModel([_always_calls] * 10)
    conversation = llm.model(model).tools(get_weather).max_tool_rounds(2).request("go").prompt_conversation()
    await run(conversation)
    assert len(model.requests) == 3
    assert [bool(r.tools) for r in model.requests] == [True, True, False]
    assert model.requests[2].tools == []
    assert conversation.last_turn is not None
    assert conversation.last_turn.stop_reason == "max_tool_rounds"
    assert conversation.last_turn.rounds == 2
    assert conversation.text == "Giving up on tools: 22 C."
    conversation.messages.validate()


async def test_default_round_limit_is_ten() -> None:
    model = ScriptedModel([_always_calls] * 20)
    conversation = llm.model(model).tools(get_weather).request("go").prompt_conversation()
    await run(conversation)
    assert len(model.requests) == 11
    assert model.requests[-1].tools == []
    assert conversation.last_turn is not None and conversation.last_turn.stop_reason == "max_tool_rounds"


async def test_tool_calls_in_the_final_tool_less_round_are_answered_and_the_turn_stops() -> None:
    model = ScriptedModel([calls(call("get_weather", {"city": "X"}))] * 2 + [calls(call("get_weather", {}, id="late"))])
    conversation = llm.model(model).tools(get_weather).max_tool_rounds(2).request("go").prompt_conversation()
    await run(conversation)
    last = conversation.messages[-1]
    assert isinstance(last, ToolMessage) and last.tool_call_id == "late" and last.is_error
    assert "round limit" in last.content
    assert conversation.last_turn is not None and conversation.last_turn.stop_reason == "max_tool_rounds"
    assert len(model.requests) == 3
    conversation.messages.validate()


async def test_zero_tool_rounds_sends_no_tools() -> None:
    model = ScriptedModel(["plain"])
    conversation = llm.model(model).tools(get_weather).max_tool_rounds(0).request("go").prompt_conversation()
    await run(conversation)
    assert model.requests[0].tools == []
    assert conversation.text == "plain"


@pytest.mark.parametrize("choice", ["required", "get_weather", "none", "auto"])
async def test_tool_choice_applies_to_the_first_request_of_each_turn_only(choice: str) -> None:
    model = ScriptedModel(
        [
            calls(call("get_weather", {"city": "A"})),
            calls(call("get_weather", {"city": "B"})),
            "one",
            calls(call("get_weather", {"city": "C"})),
            "two",
        ]
    )
    conversation = llm.model(model).tools(get_weather).tool_choice(choice).request("go").prompt_conversation()
    await run(conversation)
    assert [r.tool_choice for r in model.requests] == [choice, None, None]
    await run(conversation.continuation.request("again").prompt_conversation())
    assert [r.tool_choice for r in model.requests[3:]] == [choice, None]


async def test_tool_choice_without_tools_is_not_sent() -> None:
    model = ScriptedModel(["fine"])
    await llm.model(model).tool_choice("required").request("go").prompt_async()
    assert model.requests[0].tool_choice is None


# -- failures -----------------------------------------------------------------------------------------------------
async def test_an_exception_is_logged_then_raised_as_model_error() -> None:
    original = RuntimeError("connection reset")
    model = ScriptedModel([original])
    conversation = llm.model(model).request("Hello?").prompt_conversation()
    with pytest.raises(ModelError, match="connection reset") as info:
        await run(conversation)
    assert info.value.__cause__ is original
    assert info.value.partial == ""
    assert roles(conversation.messages) == ["UserMessage", "AssistantMessage"]
    assert conversation.messages[0].content == "Hello?"  # the user's message is kept
    failure = conversation.messages[1]
    assert isinstance(failure, AssistantMessage)
    assert failure.content == ""
    assert failure.error == LLMError(type="RuntimeError", message="connection reset", retryable=False)
    assert failure.model == "scripted"
    assert conversation.last_turn is not None and conversation.last_turn.stop_reason == "error"
    conversation.messages.validate()


async def test_model_error_with_partial_output_is_logged_with_it() -> None:
    error = ModelError("stream cut", type="server", partial="The answer is forty", retryable=True, status=502)
    model = ScriptedModel([error])
    pieces: list[str] = []
    conversation = llm.model(model).request("Answer?").prompt_conversation()
    with pytest.raises(ModelError) as info:
        async for _ in conversation.run(on_text=pieces.append):
            pass
    assert info.value is error
    assert (info.value.partial, info.value.retryable, info.value.status) == ("The answer is forty", True, 502)
    assert "".join(pieces) == "The answer is forty"  # streamed before the failure
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage)
    assert failure.content == "The answer is forty"
    assert failure.error == LLMError(type="server", message="stream cut", retryable=True)
    conversation.messages.validate()


async def test_the_next_turn_sends_the_failure_as_text_ending_in_an_error_block() -> None:
    model = ScriptedModel([ModelError("rate limited", type="rate_limit", partial="Half an"), "Full answer."])
    conversation = llm.model(model).request("Question?").prompt_conversation()
    with pytest.raises(ModelError):
        await run(conversation)
    await run(conversation.continuation.request("continue").prompt_conversation())
    sent = model.requests[1].messages
    failure = next(m for m in sent if isinstance(m, AssistantMessage))
    assert failure.content == "Half an\n[LLM_ERROR type=rate_limit message=rate limited]"
    assert failure.content.endswith("[LLM_ERROR type=rate_limit message=rate limited]")
    assert isinstance(sent[-1], UserMessage) and sent[-1].content == "continue"
    # The log itself keeps the partial text and the error apart.
    logged = conversation.messages[1]
    assert isinstance(logged, AssistantMessage) and logged.content == "Half an" and logged.error is not None
    assert roles(conversation.messages) == ["UserMessage", "AssistantMessage", "UserMessage", "AssistantMessage"]
    conversation.messages.validate()


@pytest.mark.parametrize(
    "raised",
    [SystemExit("from __str__"), KeyboardInterrupt(), GeneratorExit(), asyncio.CancelledError()],
    ids=["SystemExit", "KeyboardInterrupt", "GeneratorExit", "CancelledError"],
)
async def test_a_model_failure_whose_message_cannot_be_read_is_logged_and_raised(raised: BaseException) -> None:
    # Issue 31: a custom model's exception whose __str__ raises (SystemExit, even a KeyboardInterrupt: it is not the
    # user's Ctrl-C) ended the turn with that instead of the logged failure.
    class Unreadable(Exception):
        def __str__(self) -> str:
            raise raised

    model = ScriptedModel([Unreadable(), "ok"])
    conversation = llm.model(model).request("q").prompt_conversation()
    with pytest.raises(ModelError) as caught:
        await run(conversation)
    assert str(caught.value) == f"model {model.name!r} failed: Unreadable (its message could not be read)"
    failure = conversation.messages[1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    assert (failure.error.type, failure.error.message) == ("Unreadable", "Unreadable (its message could not be read)")
    conversation.messages.validate()
    await run(conversation)  # and the conversation goes on
    assert conversation.text == "ok"


async def test_failure_without_partial_output_is_sent_as_the_error_block_alone() -> None:
    model = ScriptedModel([ValueError("bad"), "ok"])
    conversation = llm.model(model).request("q").prompt_conversation()
    with pytest.raises(ModelError):
        await run(conversation)
    await run(conversation)  # "continue": run again without a new message
    sent = [m for m in model.requests[1].messages if isinstance(m, AssistantMessage)]
    assert sent[0].content == "[LLM_ERROR type=ValueError message=bad]"
    assert conversation.text == "ok"


async def test_failure_in_a_later_round_keeps_the_tool_results() -> None:
    model = ScriptedModel([calls(call("get_weather", {"city": "Paris"})), ModelError("overloaded", type="server")])
    conversation = llm.model(model).tools(get_weather).request("go").prompt_conversation()
    with pytest.raises(ModelError, match="overloaded"):
        await run(conversation)
    assert roles(conversation.messages) == ["UserMessage", "AssistantMessage", "ToolMessage", "AssistantMessage"]
    assert conversation.messages[2].content == "22 C in Paris"
    assert conversation.messages[3].error is not None  # type: ignore[union-attr]
    conversation.messages.validate()


async def test_empty_queue_is_a_clear_model_error() -> None:
    model = ScriptedModel([])
    conversation = llm.model(model).request("anyone?").prompt_conversation()
    with pytest.raises(ModelError, match="no scripted response left") as info:
        await run(conversation)
    assert info.value.type == "script_exhausted"
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    assert failure.error.type == "script_exhausted"
    conversation.messages.validate()


def test_sync_prompt_raises_model_error_and_keeps_the_log() -> None:
    model = ScriptedModel([ModelError("quota", type="rate_limit", partial="So")])
    conversation = Conversation(config=ConversationConfig(model=model))
    with pytest.raises(ModelError, match="quota"):
        conversation.continuation.request("hi").prompt()
    assert roles(conversation.messages) == ["UserMessage", "AssistantMessage"]
    assert conversation.messages[-1].content == "So"


# -- repair of calls a crash left unanswered ----------------------------------------------------------------------
def crashed_log() -> list[Any]:
    return [
        user("Weather in Paris and Rome?"),
        calls(call("get_weather", {"city": "Paris"}, id="p"), call("get_weather", {"city": "Rome"}, id="r")),
        ToolMessage(tool_call_id="p", tool_name="get_weather", content="22 C in Paris"),
    ]


async def test_unanswered_calls_are_answered_with_interrupted_before_the_next_request() -> None:
    model = ScriptedModel(["Paris is 22 C; Rome unknown."])
    conversation = Conversation(messages=crashed_log(), config=ConversationConfig(model=model, tools=[get_weather]))
    new = await run(conversation)
    repaired = new[0]
    assert isinstance(repaired, ToolMessage)
    assert (repaired.tool_call_id, repaired.tool_name, repaired.is_error) == ("r", "get_weather", True)
    assert repaired.content.startswith("interrupted")
    assert conversation.messages[3] is repaired
    sent = model.requests[0].messages
    assert sent[-1].content == repaired.content and isinstance(sent[-1], ToolMessage)
    conversation.messages.validate()


async def test_unanswered_calls_are_repaired_before_a_new_request_is_added() -> None:
    model = ScriptedModel(["Rome is unknown, sorry."])
    conversation = Conversation(messages=crashed_log(), config=ConversationConfig(model=model, tools=[get_weather]))
    await conversation.continuation.request("And Rome?").prompt_async()
    assert roles(conversation.messages) == [
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "ToolMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    repaired = conversation.messages[3]
    assert isinstance(repaired, ToolMessage) and repaired.tool_call_id == "r" and repaired.is_error
    assert repaired.content.startswith("interrupted")
    conversation.messages.validate()


# -- capabilities ---------------------------------------------------------------------------------------------------
async def test_capability_error_before_any_request() -> None:
    model = ScriptedModel(["never"], capabilities=ModelCapabilities(tools=False))
    conversation = llm.model(model).tools(get_weather).request("go").prompt_conversation()
    with pytest.raises(CapabilityError, match="does not support tools"):
        await run(conversation)
    assert model.requests == []
    assert model.remaining == 1


async def test_images_need_an_image_capable_model() -> None:
    from threadline import Attachment

    model = ScriptedModel(["never"], capabilities=ModelCapabilities(images=False))
    builder = llm.model(model).request("what is it?", attachments=[Attachment.image(b"\x89PNG\r\n\x1a\nxx")])
    with pytest.raises(CapabilityError, match="images"):
        await builder.prompt_async()
    assert model.requests == []


async def test_repeated_tool_call_ids_from_a_model_are_made_unique_in_the_log() -> None:
    """Some servers number calls call_0, call_1… in every answer; the log must still pair each result with its call."""
    from threadline import AssistantMessage, Conversation, ConversationConfig, ToolCall, ToolMessage, UserMessage
    from threadline.testing import ScriptedModel

    def echo(text: str) -> str:
        """Echo the text."""
        return text

    def calls(*texts: str) -> AssistantMessage:
        return AssistantMessage(tool_calls=[ToolCall(id="call_0", name="echo", arguments={"text": t}) for t in texts])

    model = ScriptedModel([calls("a"), "first done", calls("b", "c"), "second done"])
    conv = Conversation(config=ConversationConfig(model=model, tools=[echo]))
    for question in ("one", "two"):
        conv.add(UserMessage(content=question))
        async for _ in conv:
            pass
    conv.messages.validate()
    ids = [c.id for m in conv.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert ids[0] == "call_0" and len(set(ids)) == 3 and all(i.startswith("call_0") for i in ids)
    results = {m.tool_call_id: m.content for m in conv.messages if isinstance(m, ToolMessage)}
    assert [results[i] for i in ids] == ["a", "b", "c"]
    # What the model is sent next uses the same, now unique, ids.
    sent = [m for m in model.requests[3].messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in sent] == ids


# -- Ctrl-C ---------------------------------------------------------------------------------------------------------
class Storyteller(Model):
    """Streams the start of a story, then stops: with Ctrl-C, or by waiting until it is cancelled."""

    name = "storyteller"
    capabilities = ModelCapabilities(tools=True, streaming=True)

    def __init__(self, stop: str) -> None:
        self.stop = stop
        self.started: asyncio.Event | None = None

    async def stream(self, request: ModelRequest) -> Any:
        yield TextDelta("Once upon ")
        yield TextDelta("a time")
        if self.stop == "ctrl-c":
            raise KeyboardInterrupt
        assert self.started is not None
        self.started.set()
        await asyncio.sleep(3600)
        yield ModelResponse(content="never")


def test_ctrl_c_during_a_model_call_is_logged_as_interrupted_with_the_partial_text() -> None:
    conversation = Conversation(config=ConversationConfig(model=Storyteller("ctrl-c")))
    conversation.add(user("Tell me a story."))

    async def turn() -> None:
        async for _ in conversation:
            pass

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(turn())
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    assert (failure.error.type, failure.content, failure.error.retryable) == ("interrupted", "Once upon a time", True)
    conversation.messages.validate()


async def test_a_cancelled_model_call_is_logged_as_interrupted_with_the_partial_text() -> None:
    """asyncio turns Ctrl-C into the cancellation of the running task (asyncio.run, the CLI's runner)."""
    model = Storyteller("cancel")
    model.started = asyncio.Event()
    conversation = Conversation(config=ConversationConfig(model=model))
    conversation.add(user("Tell me a story."))
    task = asyncio.ensure_future(run(conversation))
    await model.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    assert (failure.error.type, failure.content) == ("interrupted", "Once upon a time")
    # The conversation is free again and continues from the failure.
    scripted = ScriptedModel(["...there was a dragon."])
    assert await conversation.continuation.model(scripted).prompt_async() == "...there was a dragon."
    assert "[LLM_ERROR type=interrupted" in (scripted.requests[0].messages[-1].content or "")


# -- secrets in a model's own exception ------------------------------------------------------------------------------
class LeakyModel(Model):
    """A model written outside threadline that fails with its key in the message, as a misconfigured client does."""

    name = "leaky"
    capabilities = ModelCapabilities(tools=True, streaming=True)

    def __init__(self, message: str) -> None:
        self.message = message

    async def stream(self, request: ModelRequest) -> Any:
        yield TextDelta("Let me ")
        raise RuntimeError(self.message)


def test_a_key_in_a_models_own_exception_is_masked_in_the_log_the_store_and_the_error_raised(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Before, the text of an exception that was not a ModelError was logged and raised as it was: a key in it
    reached the store, the viewer's failure card, exports and the next request to the model."""
    from threadline import open_store

    key = "abc123-SECRET-from-the-environment"
    monkeypatch.setenv("MYMODEL_API_KEY", key)
    stray = "sk-proj-AbCdEf0123456789GhIjKl"
    store = open_store(f"sqlite:///{tmp_path / 'log.db'}")
    model = LeakyModel(f"401 for key {key} (also tried {stray})")
    conversation = Conversation(config=ConversationConfig(model=model), store=store)
    conversation.add(user("Hello?"))
    with pytest.raises(ModelError) as raised:
        asyncio.run(run(conversation))
    failure = conversation.messages[-1]
    assert isinstance(failure, AssistantMessage) and failure.error is not None
    assert failure.error.type == "RuntimeError" and failure.content == "Let me "
    assert failure.error.message.startswith("401 for key ***")
    stored = store.load(conversation.id).to_json()
    for text in (str(raised.value), failure.error.message, stored):
        assert key not in text and stray not in text
    store.close()
