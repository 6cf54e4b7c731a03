"""Write-through recording (issue 8, item 1; r10_store_fail.py): a store write that fails at any persistence point
of a turn stops the turn with the log in memory and the stored log equal, and a later turn leaves a stored log that
validates — on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

from threadline import (
    AssistantMessage,
    Conversation,
    Message,
    ModelError,
    StoreError,
    ToolCall,
    ToolMessage,
    UserMessage,
    llm,
)
from threadline.store import Store
from threadline.testing import ScriptedModel, ScriptedRequest

QUESTION = "Weather in Paris?"

# Where the store fails: which message's write is refused (once).
POINTS: dict[str, Callable[[Message], bool]] = {
    "user message": lambda m: isinstance(m, UserMessage) and m.content == QUESTION,
    "assistant tool-call message": lambda m: isinstance(m, AssistantMessage) and bool(m.tool_calls),
    "tool result": lambda m: isinstance(m, ToolMessage),
    "final answer": lambda m: isinstance(m, AssistantMessage) and not m.tool_calls and m.error is None,
    "failure record": lambda m: isinstance(m, AssistantMessage) and m.error is not None,
}


def failing_store(url: str, refuse: Callable[[Message], bool]) -> Store:
    """The backend of ``url``, whose ``append`` refuses the first message ``refuse`` picks, as a locked database
    or a lost connection would."""
    from threadline.store.postgres import PostgresStore
    from threadline.store.sqlite import SQLiteStore

    base: Any = SQLiteStore if url.startswith("sqlite://") else PostgresStore

    class Failing(base):  # type: ignore[misc]
        armed = True

        def append(self, conversation_id: str, messages: Iterable[Message], **options: Any) -> None:
            items = list(messages)
            if self.armed and any(refuse(m) for m in items):
                self.armed = False
                raise StoreError("database is locked")
            super().append(conversation_id, items, **options)

    return Failing(url[len("sqlite:///") :] if url.startswith("sqlite://") else url)  # type: ignore[no-any-return]


@pytest.fixture(params=list(POINTS))
def point(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def flaky(store_url: str, point: str) -> Iterator[Store]:
    store = failing_store(store_url, POINTS[point])
    try:
        yield store
    finally:
        store.close()


class Weatherman:
    """A model that calls ``get_weather`` on a new question and answers once it has the result; with ``fail_first``
    its first call fails after streaming some text."""

    def __init__(self, fail_first: bool) -> None:
        self.fail_first = fail_first
        self.calls = 0

    def __call__(self, request: ScriptedRequest) -> Any:
        self.calls += 1
        if self.fail_first and self.calls == 1:
            return ModelError("the server is overloaded", type="server", partial="It is")
        last = request.messages[-1]
        if isinstance(last, ToolMessage):
            return f"Answer: {last.content}"
        return AssistantMessage(tool_calls=[ToolCall(id=f"call_{self.calls}", name="get_weather", arguments={})])


def test_a_failed_write_stops_the_turn_with_memory_and_store_equal(flaky: Store, point: str) -> None:
    ran: list[str] = []

    def get_weather() -> str:
        """Today's weather."""
        ran.append("ran")
        return "22 C"

    brain = Weatherman(fail_first=point == "failure record")
    model = ScriptedModel([brain] * 10)
    conversation = Conversation(store=flaky)
    builder = conversation.continuation.model(model).tools(get_weather).request(QUESTION)

    with pytest.raises(StoreError, match="database is locked"):
        builder.prompt()

    # The failure reached the caller, and nothing that failed to be stored is in memory.
    stored = flaky.load(conversation.id)
    assert stored == conversation.messages
    if point == "assistant tool-call message":
        assert ran == []  # the turn stopped before any tool ran
    if point == "user message":
        assert len(conversation.messages) == 0 and brain.calls == 0

    # A later turn (the user retries) goes on, and the stored log validates and equals memory.
    answer = conversation.continuation.request("Try again, please.").prompt()
    assert answer.startswith("Answer: ")
    stored = flaky.load(conversation.id)
    assert stored == conversation.messages
    stored.validate()
    reloaded = Conversation.load(conversation.id, flaky)
    reloaded.messages.validate()
    assert reloaded.messages == conversation.messages


def test_r10_reproduction_memory_and_store_stay_equal(store_url: str) -> None:
    """The reproduction as filed: the assistant tool-call message fails once, the user retries."""
    store = failing_store(store_url, POINTS["assistant tool-call message"])
    try:

        def get_weather(city: str) -> str:
            """Weather."""
            return "22 C"

        model = ScriptedModel(
            [AssistantMessage(tool_calls=[ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})]), "ok"]
        )
        conversation = llm.model(model).store(store).tools(get_weather).request("weather?").prompt_conversation()
        with pytest.raises(StoreError):
            conversation.continuation.prompt()
        conversation.continuation.request("again?").prompt()
        stored = store.load(conversation.id)
        assert stored == conversation.messages
        stored.validate()
    finally:
        store.close()
