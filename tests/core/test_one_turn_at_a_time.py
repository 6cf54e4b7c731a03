"""One turn at a time per conversation, in one process (issue 8, item 3; r4_concurrent_turns.py): a second turn on
a conversation waits for the running one — messages it adds included — whether it comes from another task or another
thread; a call that cannot wait (synchronous, inside a running event loop) raises `ConversationBusy`."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import gc
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import pytest

from tests.store._backends import backend_url
from threadline import (
    AssistantMessage,
    Conversation,
    ConversationBusy,
    ConversationConfig,
    MessageList,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    llm,
    tool,
    user,
)
from threadline.store import open_store
from threadline.testing import ScriptedModel, ScriptedRequest


def tool_then_answer(request: ScriptedRequest) -> Any:
    """Call the tool on the first request of a turn, answer after its result."""
    if isinstance(request.messages[-1], UserMessage):
        return AssistantMessage(tool_calls=[ToolCall(id="", name="slow_tool", arguments={"x": 1})])
    return "done"


async def slow_tool(x: int) -> str:
    """Take a moment."""
    await asyncio.sleep(0.05)
    return str(x)


def assert_turns_do_not_interleave(log: MessageList, questions: list[str]) -> None:
    """The log validates, and each question is followed by its own whole turn: call, result, answer."""
    log.validate()
    shape = [
        ("user", m.content)
        if isinstance(m, UserMessage)
        else ("calls" if isinstance(m, AssistantMessage) and m.tool_calls else type(m).__name__)
        for m in log
    ]
    expected: list[Any] = []
    for question in questions:
        expected += [("user", question), "calls", "ToolMessage", "AssistantMessage"]
    assert shape == expected


async def test_two_turns_started_together_run_one_after_the_other() -> None:
    model = ScriptedModel([tool_then_answer] * 10)
    conversation = llm.model(model).tools(slow_tool).request("first").prompt_conversation()
    await conversation.continuation.prompt_async()
    results = await asyncio.gather(
        conversation.continuation.request("A").prompt_async(),
        conversation.continuation.request("B").prompt_async(),
    )
    assert results == ["done", "done"]  # each caller gets its own turn's answer, never ''
    assert_turns_do_not_interleave(conversation.messages, ["first", "A", "B"])


async def test_waiting_turns_go_in_the_order_they_came() -> None:
    model = ScriptedModel([tool_then_answer] * 20)
    conversation = Conversation(config=ConversationConfig(model=model, tools=[slow_tool]))
    questions = [f"q{i}" for i in range(5)]
    await asyncio.gather(*(conversation.continuation.request(q).prompt_async() for q in questions))
    assert_turns_do_not_interleave(conversation.messages, questions)


def test_two_threads_prompting_one_conversation_take_turns() -> None:
    def sync_slow_tool(x: int) -> str:
        """Take a moment."""
        time.sleep(0.05)
        return str(x)

    def answer(request: ScriptedRequest) -> Any:
        if isinstance(request.messages[-1], UserMessage):
            return AssistantMessage(tool_calls=[ToolCall(id="", name="sync_slow_tool", arguments={"x": 1})])
        return "done"

    model = ScriptedModel([answer] * 40)
    conversation = Conversation(config=ConversationConfig(model=model, tools=[sync_slow_tool]))
    answers: list[str] = []
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        try:
            for i in range(3):
                answers.append(conversation.continuation.request(f"{name}{i}").prompt())
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(name,)) for name in ("a", "b", "c")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert answers == ["done"] * 9
    questions = [m.content for m in conversation.messages if isinstance(m, UserMessage)]
    assert sorted(questions) == sorted(f"{n}{i}" for n in "abc" for i in range(3))
    assert_turns_do_not_interleave(conversation.messages, questions)


async def test_a_synchronous_call_that_cannot_wait_raises_conversation_busy() -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def gated(x: int) -> str:
        """Wait for the test."""
        started.set()
        await release.wait()
        return "ok"

    def answer(request: ScriptedRequest) -> Any:
        if isinstance(request.messages[-1], UserMessage):
            return AssistantMessage(tool_calls=[ToolCall(id="g", name="gated", arguments={"x": 1})])
        return "done"

    conversation = Conversation(config=ConversationConfig(model=ScriptedModel([answer] * 4), tools=[gated]))
    running = asyncio.ensure_future(conversation.continuation.request("first").prompt_async())
    await started.wait()
    before = list(conversation.messages)
    with pytest.raises(ConversationBusy, match="running a turn"):
        conversation.continuation.request("interjection").prompt_conversation()
    with pytest.raises(ConversationBusy, match="running a turn"):
        conversation.add(user("interjection"))
    assert list(conversation.messages) == before  # nothing was added inside the running turn's tool group
    release.set()
    assert await running == "done"
    conversation.add(user("now it fits"))  # once the turn is over, adding works again
    conversation.messages.validate()


async def test_a_turn_that_waits_longer_than_busy_timeout_gives_up() -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def gated(x: int) -> str:
        """Wait for the test."""
        started.set()
        await release.wait()
        return "ok"

    def answer(request: ScriptedRequest) -> Any:
        if isinstance(request.messages[-1], UserMessage):
            return AssistantMessage(tool_calls=[ToolCall(id="", name="gated", arguments={"x": 1})])
        return "done"

    config = ConversationConfig(model=ScriptedModel([answer] * 4), tools=[gated], busy_timeout=0.05)
    conversation = Conversation(config=config)
    running = asyncio.ensure_future(conversation.continuation.request("first").prompt_async())
    await started.wait()
    with pytest.raises(ConversationBusy, match="waited"):
        await conversation.continuation.request("second").prompt_async()
    release.set()
    assert await running == "done"
    assert [m.content for m in conversation.messages if isinstance(m, UserMessage)] == ["first"]
    assert await conversation.continuation.request("second").prompt_async() == "done"
    conversation.messages.validate()


async def test_a_waiting_turn_that_is_cancelled_lets_the_next_one_through() -> None:
    model = ScriptedModel([tool_then_answer] * 10)
    conversation = Conversation(config=ConversationConfig(model=model, tools=[slow_tool]))
    first = asyncio.ensure_future(conversation.continuation.request("A").prompt_async())
    await asyncio.sleep(0)  # A holds the conversation
    second = asyncio.ensure_future(conversation.continuation.request("B").prompt_async())
    third = asyncio.ensure_future(conversation.continuation.request("C").prompt_async())
    await asyncio.sleep(0.01)
    second.cancel()
    assert await first == "done" and await third == "done"
    with pytest.raises(asyncio.CancelledError):
        await second
    assert_turns_do_not_interleave(conversation.messages, ["A", "C"])


def test_a_reservation_that_will_not_run_can_be_released() -> None:
    model = ScriptedModel(["one", "two"])
    conversation = llm.model(model).request("never run").prompt_conversation()  # reserved for its turn
    conversation.release()
    conversation.release()  # nothing reserved: nothing happens
    assert conversation.continuation.request("and now").prompt() == "one"


def test_acquire_says_once_that_it_waits_then_reserves_the_next_turn() -> None:
    started, release = threading.Event(), threading.Event()

    def gated(x: int) -> str:
        """Wait for the test."""
        started.set()
        release.wait(60)
        return "ok"

    def answer(request: ScriptedRequest) -> Any:
        if isinstance(request.messages[-1], UserMessage):
            return AssistantMessage(tool_calls=[ToolCall(id="", name="gated", arguments={"x": 1})])
        return "done"

    conversation = Conversation(config=ConversationConfig(model=ScriptedModel([answer] * 4), tools=[gated]))
    answers: list[str] = []
    first = threading.Thread(target=lambda: answers.append(conversation.continuation.request("first").prompt()))
    first.start()
    assert started.wait(60)
    said: list[str] = []

    def waiting() -> None:
        said.append("waiting for another turn")
        release.set()  # let the running turn finish only once this caller waits for it

    conversation.acquire(on_wait=waiting)
    assert said == ["waiting for another turn"]
    first.join(60)
    assert answers == ["done"]
    assert conversation.continuation.request("second").prompt() == "done"
    assert_turns_do_not_interleave(conversation.messages, ["first", "second"])


async def test_a_turn_left_early_by_its_consumer_lets_the_next_turn_in() -> None:
    model = ScriptedModel([tool_then_answer] * 10)
    conversation = Conversation(config=ConversationConfig(model=model, tools=[slow_tool], busy_timeout=30))
    conversation.add(user("first"))
    turn = conversation.run()
    async for _ in turn:
        break  # the consumer stops after the tool call; the turn is closed, and the conversation freed
    await turn.aclose()  # type: ignore[attr-defined]
    assert await conversation.continuation.request("second").prompt_async() == "done"
    conversation.messages.validate()  # the abandoned call was answered "interrupted" before "second"


def test_a_stream_left_early_lets_the_next_turn_in() -> None:
    model = ScriptedModel(["A long answer that streams in several pieces.", "again"])
    conversation = Conversation(config=ConversationConfig(model=model, busy_timeout=30))
    for _ in conversation.continuation.request("first").stream():
        break
    assert conversation.continuation.request("second").prompt() == "again"


# -- a tool writing to the conversation whose turn runs it (issue 31) -------------------------------------------------
# `conversation.record(...)` from inside a running tool answered the running call "interrupted" before recording, and
# the turn then answered it again: a log (in memory and in the store) that never validated again. Now every write to
# that conversation, and every turn started on it, from inside one of its own running tools is refused with a
# `ConversationBusy` saying why; the tool sees it as its own exception, and the turn goes on with a valid log.
def _hold_and_record(conversation: Conversation) -> None:
    with conversation.hold():
        conversation.record(user("held"))


def _sync_writers() -> dict[str, Any]:
    return {
        "record a user message": lambda c: c.record(user("from the tool")),
        "record a system message": lambda c: c.record(SystemMessage(content="a note")),
        "record its own result": lambda c: c.record(
            ToolMessage(tool_call_id="c1", tool_name="note", content="answered by the tool itself")
        ),
        "add": lambda c: c.add(user("from the tool")),
        "prompt": lambda c: c.continuation.request("nested").prompt(),
        "hold": _hold_and_record,
    }


async def _async_write(writer: str, conversation: Conversation) -> None:
    if writer == "prompt":
        await conversation.continuation.request("nested").prompt_async()
    elif writer == "hold":
        async with conversation.hold():
            conversation.record(user("held"))
    else:
        _sync_writers()[writer](conversation)


@pytest.mark.parametrize("backend", ["none", "sqlite", "postgres"])
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("writer", list(_sync_writers()))
def test_a_tool_writing_to_the_conversation_running_it_is_refused_and_the_log_stays_valid(
    writer: str, is_async: bool, backend: str, tmp_path: Path
) -> None:
    found: dict[str, Conversation] = {}

    def sync_note() -> str:
        _sync_writers()[writer](found["conversation"])
        return "written"

    async def async_note() -> str:
        await _async_write(writer, found["conversation"])
        return "written"

    with contextlib.ExitStack() as stack:
        store = None if backend == "none" else open_store(stack.enter_context(backend_url(backend, tmp_path)))
        if store is not None:
            stack.callback(store.close)
        model = ScriptedModel([AssistantMessage(tool_calls=[ToolCall(id="c1", name="note")]), "done", "nested"])
        builder = llm.model(model).tools(tool(async_note if is_async else sync_note, name="note"))
        if store is not None:
            builder = builder.store(store)
        # Short waits: before the fix, a tool starting a turn on its own conversation waited for a turn that waits
        # for the tool.
        conversation = builder.request("go").prompt_conversation(tool_timeout=5)
        conversation.config.busy_timeout = 2
        found["conversation"] = conversation
        assert conversation.continuation.prompt() == "done"
        (result,) = [m for m in conversation.messages if isinstance(m, ToolMessage)]
        assert result.is_error
        assert result.content.startswith(
            f"Tool 'note' failed: ConversationBusy: conversation {conversation.id} is running the turn that called "
            "this tool"
        ), result.content
        assert [type(m).__name__ for m in conversation.messages] == [
            "UserMessage",
            "AssistantMessage",
            "ToolMessage",
            "AssistantMessage",
        ]
        conversation.messages.validate()
        if store is not None:
            stored = store.load(conversation.id)
            stored.validate()
            assert list(stored) == list(conversation.messages)
        # Once the turn is over, writing to the conversation works again.
        conversation.add(user("after the turn"))
        conversation.messages.validate()


def test_something_a_tool_leaves_running_in_its_context_does_not_keep_the_conversation_alive() -> None:
    # What marks a tool's context as its conversation's must not hold the conversation: a tool may start something
    # that lives on in a copy of that context (an MCP connection's session task did), which would keep the
    # conversation, its tools and their servers alive as long.
    release = threading.Event()

    def start_worker() -> str:
        context = contextvars.copy_context()
        threading.Thread(target=context.run, args=(release.wait, 60), daemon=True).start()
        return "started"

    model = ScriptedModel([AssistantMessage(tool_calls=[ToolCall(id="c1", name="start_worker")]), "done"])
    conversation = llm.model(model).tools(start_worker).request("go").prompt_conversation()
    try:
        assert conversation.continuation.prompt() == "done"
        gone = weakref.ref(conversation)
        del conversation
        gc.collect()
        assert gone() is None
    finally:
        release.set()
