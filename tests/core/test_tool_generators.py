"""A sync tool's result is read on its worker thread, under its timeout (DESIGN §11: a tool that hangs is cut off by
its timeout): a generator's body, and an iterator inside a returned value, never run on the event loop, so a slow or
endless one neither blocks the turn's other tools nor escapes the timeout."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

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
