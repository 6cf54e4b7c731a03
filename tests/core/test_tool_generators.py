"""A sync tool's result is read on its worker thread, under its timeout (docs/failure-rules.md#tool-timeouts: a tool
that hangs is cut off by its timeout): a generator's body, and an iterator inside a returned value, never run on the
event loop, so a slow or endless one neither blocks the turn's other tools nor escapes the timeout. Once the timeout has
passed, the reading stops (issue 31): an endless generator is closed, not read on into memory after its turn; an async
generator that never awaits cannot hold the event loop past its timeout."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from threadline import ToolMessage, llm, tool
from threadline.testing import ScriptedModel

from ._support import call, calls


def run_round(*tools: Any, names: list[str]) -> list[ToolMessage]:
    model = ScriptedModel([calls(*(call(name) for name in names)), "done"])
    conversation = llm.model(model).tools(*tools).request("go").prompt_conversation()
    assert conversation.continuation.prompt() == "done"
    conversation.messages.validate()
    return [message for message in conversation.messages if isinstance(message, ToolMessage)]


def test_an_endless_generator_is_cut_off_by_its_timeout() -> None:
    release = threading.Event()

    def endless() -> Iterator[int]:
        number = 0
        while not release.is_set():  # "endless" until the test ends, so a failing test cannot hang for good
            release.wait(0.05)
            number += 1
            if number > 400:
                return
            yield number

    try:
        (result,) = run_round(tool(endless, timeout=0.3), names=["endless"])
    finally:
        release.set()
    assert result.is_error
    assert result.content == "Tool 'endless' did not finish in 0.3 s; it may still be running."


def test_a_generators_body_runs_off_the_event_loop() -> None:
    threads: dict[str, threading.Thread] = {}
    loop_ran: list[int] = []

    def numbers() -> Iterator[int]:
        threads["body"] = threading.current_thread()
        # While the body runs, the turn's other tool (on the loop) gets on with its work.
        for number in range(3):
            for _ in range(100):
                if len(loop_ran) > number:
                    break
                threading.Event().wait(0.02)
            yield number

    async def ticker() -> str:
        threads["loop"] = threading.current_thread()
        for tick in range(3):
            loop_ran.append(tick)
            await asyncio.sleep(0.01)
        return "ticked"

    generated, ticked = run_round(numbers, ticker, names=["numbers", "ticker"])
    assert (generated.content, generated.is_error) == ("[0,1,2]", False)
    assert ticked.content == "ticked"
    assert threads["body"] is not threads["loop"]


def test_an_iterator_inside_a_result_is_read_off_the_event_loop() -> None:
    threads: list[threading.Thread] = []

    def lines() -> Iterator[str]:
        threads.append(threading.current_thread())
        yield "one"

    def report() -> dict[str, Any]:
        return {"lines": lines()}

    (result,) = run_round(report, names=["report"])
    assert result.content == '{"lines":["one"]}'
    assert threads[0].name.startswith("threadline-tool-")


def test_an_exception_in_a_generators_body_is_the_tools_failure() -> None:
    def broken() -> Iterator[int]:
        yield 1
        raise ValueError("the source went away")

    (result,) = run_round(broken, names=["broken"])
    assert result.is_error
    assert result.content == "Tool 'broken' failed: ValueError: the source went away"


# -- reading stops at the timeout (issue 31) ---------------------------------------------------------------------------
# A hostile round found an endless sync generator read into a list after its turn had answered (memory from 198 MB to
# 2.5 GB in 15 s), and an async generator that never awaits holding the turn past its timeout.
def _endless_shapes(body: Callable[[], Iterator[str]]) -> dict[str, Callable[[], Any]]:
    return {
        "generator": body,
        "inside a dict": lambda: {"lines": body()},
        "iterator": lambda: map(str.upper, body()),  # not a generator: read all the same (as pydantic reads it)
    }


@pytest.mark.parametrize("shape", ["generator", "inside a dict", "iterator"])
def test_an_endless_generator_is_no_longer_read_once_its_timeout_passed(shape: str) -> None:
    release, closed = threading.Event(), threading.Event()
    pulled = [0]

    line = "x" * 1000

    def lines() -> Iterator[str]:
        try:
            while not release.is_set():  # "endless" until the test ends, so a failing test cannot run on for good
                pulled[0] += 1
                if pulled[0] % 100 == 0:
                    time.sleep(0.001)  # slow enough that a failing run does not fill this machine's memory
                yield line
        finally:
            closed.set()

    endless = _endless_shapes(lines)[shape]
    try:
        (result,) = run_round(tool(endless, name="endless", timeout=0.3), names=["endless"])
        at_answer = pulled[0]
        # The reading stopped when the timeout passed: the generator is closed, and no item is pulled any more.
        stopped = closed.wait(5)
        after = pulled[0]
    finally:
        release.set()
    assert result.content == "Tool 'endless' did not finish in 0.3 s; it may still be running."
    assert stopped, f"the generator was still read after its turn had answered ({pulled[0]:,} items)"
    assert after - at_answer <= 1


def test_an_async_generator_that_never_awaits_ends_at_its_timeout() -> None:
    release, closed, turn_over = threading.Event(), threading.Event(), threading.Event()
    pulled = [0]

    line = "x" * 1000

    async def endless() -> AsyncIterator[str]:
        try:
            while not release.is_set():  # never suspends: only the reader can give the event loop a turn
                pulled[0] += 1
                if pulled[0] % 100 == 0:
                    time.sleep(0.001)  # blocks, as it never awaits; slow enough that a failing run fits in memory
                yield line
        finally:
            closed.set()

    model = ScriptedModel([calls(call("endless")), "went on without it"])
    conversation = llm.model(model).tools(tool(endless, timeout=0.3)).request("go").prompt_conversation()

    def drive() -> None:
        conversation.continuation.prompt()
        turn_over.set()

    runner = threading.Thread(target=drive, daemon=True)
    runner.start()
    finished = turn_over.wait(30)  # generous: the turn itself takes the timeout
    at_answer = pulled[0]
    release.set()  # a failing run ends here, not in a hung test
    runner.join(30)
    assert finished, f"the turn was held past the timeout ({pulled[0]:,} items read)"
    result = conversation.messages[2]
    assert isinstance(result, ToolMessage)
    assert (result.content, result.is_error) == ("Tool 'endless' timed out after 0.3 s and was stopped.", True)
    assert closed.is_set()
    assert pulled[0] == at_answer
    assert conversation.text == "went on without it"
    conversation.messages.validate()


def test_a_generator_returned_by_an_async_tool_is_read_off_the_event_loop_until_its_timeout() -> None:
    release, closed, turn_over = threading.Event(), threading.Event(), threading.Event()
    pulled = [0]
    threads: set[str] = set()

    def lines() -> Iterator[str]:
        threads.add(threading.current_thread().name)
        try:
            while not release.is_set():
                pulled[0] += 1
                if pulled[0] % 100 == 0:
                    time.sleep(0.001)  # slow enough that a failing run fits in memory
                yield "line"
        finally:
            closed.set()

    @tool(timeout=0.3)
    async def endless() -> Any:
        await asyncio.sleep(0)
        return {"lines": lines()}

    model = ScriptedModel([calls(call("endless")), "went on without it"])
    conversation = llm.model(model).tools(endless).request("go").prompt_conversation()

    def drive() -> None:
        conversation.continuation.prompt()
        turn_over.set()

    runner = threading.Thread(target=drive, daemon=True)
    runner.start()
    finished = turn_over.wait(30)  # generous: the turn itself takes the timeout
    stopped = closed.wait(5)
    release.set()  # a failing run ends here, not in a hung test
    runner.join(30)
    assert finished, f"the turn was held past the timeout ({pulled[0]:,} items read)"
    assert stopped, "the generator was still read after its turn had answered"
    result = conversation.messages[2]
    assert isinstance(result, ToolMessage)
    assert result.content == "Tool 'endless' did not finish in 0.3 s; it may still be running."
    assert all(name.startswith("threadline-tool-") for name in threads), threads
    conversation.messages.validate()


def test_an_async_generator_that_never_awaits_lets_the_turns_other_tools_run() -> None:
    started, ticks, seen = threading.Event(), [], []

    async def numbers() -> AsyncIterator[int]:
        started.set()
        give_up = time.monotonic() + 10  # a failing run ends here: the ticker never got the event loop
        number = 0
        while len(ticks) < 3 and time.monotonic() < give_up:  # never suspends itself
            number += 1
            if number % 100 == 0:
                time.sleep(0.001)  # blocks, as it never awaits; slow enough that a failing run fits in memory
            yield number
        seen.append(len(ticks))

    async def ticker() -> str:
        while not started.is_set():
            await asyncio.sleep(0.001)
        for tick in range(3):
            ticks.append(tick)
            await asyncio.sleep(0)
        return "ticked"

    generated, ticked = run_round(numbers, ticker, names=["numbers", "ticker"])
    assert not generated.is_error
    assert seen == [3], "the other tool did not run while the generator was read"
    assert ticked.content == "ticked"
