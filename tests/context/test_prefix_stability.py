"""The context builder keeps each request's prefix what the request before sent, so a provider's prompt cache of
it is hit (``.cache(prompt=True)``): the rounds of a tool loop, and the next turn, send the earlier request again
unchanged (same messages, same order, same bytes: system prefix, documents, shaped tool results) with the new
messages after it; a window that must trim drops whole units from its old end only and keeps the head (the system
prefix and the log's opening instructions) as it was."""

from __future__ import annotations

import itertools

import msgspec

from threadline import (
    AssistantMessage,
    Conversation,
    ConversationConfig,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    assistant,
    llm,
    user,
)
from threadline.context import ContextSettings
from threadline.testing import ScriptedModel, ScriptedRequest


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C and sunny in {city}"


def get_report(city: str) -> str:
    """A long weather report."""
    return f"Report for {city}: " + "clear skies, light wind. " * 200


def call(call_id: str, name: str, city: str) -> AssistantMessage:
    return AssistantMessage(tool_calls=[ToolCall(id=call_id, name=name, arguments={"city": city})])


def sent(request: ScriptedRequest) -> list[bytes]:
    """A request's messages as the bytes they are (ids, contents, calls, results)."""
    return [msgspec.json.encode(message) for message in request.messages]


def test_each_round_of_a_tool_loop_starts_with_the_previous_request_unchanged() -> None:
    model = ScriptedModel(
        [
            call("c1", "get_weather", "Paris"),
            call("c2", "get_report", "Lyon"),  # a long result: sent as a preview, the same in every later round
            call("c3", "get_weather", "Nice"),
            "Sunny everywhere.",
        ]
    )
    builder = llm.model(model).mode("agent").persona("A forecaster.").agent("Be brief.")
    builder = builder.tools(get_weather, get_report).document("Cities: Paris, Lyon, Nice.")
    assert builder.request("Weather in three cities?").prompt() == "Sunny everywhere."
    requests = [sent(request) for request in model.requests]
    assert len(requests) == 4
    for before, after in itertools.pairwise(requests):
        assert after[: len(before)] == before
        assert len(after) == len(before) + 2  # the round's call and its result, after everything sent before
    preview = model.requests[2].messages[-1]
    assert isinstance(preview, ToolMessage) and "Full output: artifact://" in preview.content


def test_the_next_turn_starts_with_the_last_request_of_the_turn_before() -> None:
    model = ScriptedModel([call("c1", "get_weather", "Paris"), "Sunny.", "You're welcome."])
    conv = llm.model(model).tools(get_weather).request("Weather in Paris?").prompt_conversation()
    conv.run_sync()
    conv.continuation.request("Thanks!").prompt()
    last, following = sent(model.requests[1]), sent(model.requests[2])
    assert following[: len(last)] == last
    assert [type(message) for message in model.requests[2].messages[len(last) :]] == [AssistantMessage, UserMessage]


def test_a_trimmed_window_drops_whole_units_from_its_old_end_and_keeps_its_head() -> None:
    history = [message for n in range(5) for message in (user(f"question {n}"), assistant(f"answer {n}"))]
    opening = SystemMessage(content="Answer in French.")
    conv = Conversation([opening, *history], ConversationConfig(context=ContextSettings(max_messages=9)))
    model = ScriptedModel([call("c1", "get_weather", "Paris"), call("c2", "get_weather", "Lyon"), "Beau temps."])
    assert conv.continuation.model(model).tools(get_weather).request("Météo ?").prompt() == "Beau temps."
    requests = [sent(request) for request in model.requests]
    head = requests[0][:2]  # the builder's system prefix and the log's opening instructions
    assert model.requests[0].messages[1].content == "Answer in French."
    windows = [request[2:] for request in requests]
    assert all(request[:2] == head for request in requests)
    for before, after in itertools.pairwise(windows):
        dropped = next(index for index in range(len(before) + 1) if after[: len(before) - index] == before[index:])
        assert dropped > 0  # the window had to move: the new round's messages took the room of old ones
        assert after[len(before) - dropped :] == after[-2:]  # and only the new round comes after what stayed
    for request in model.requests:
        assert not isinstance(request.messages[2], ToolMessage)  # never a result without its call
