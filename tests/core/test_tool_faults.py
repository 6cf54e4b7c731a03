"""Tools that misbehave worse than raising an `Exception` (issue 8, items 12, 13, 15 and 16).

- ``SystemExit`` and other `BaseException`s raised by a tool are error results, as any exception is
  (docs/failure-rules.md#tool-failures); ``KeyboardInterrupt`` and the cancellation of the turn still stop the turn, and
  the call left unanswered is answered ``interrupted`` on the next run.
- A tool past its timeout: a sync tool cannot be stopped, so the result says it may still be running, its thread
  never keeps the process alive, and hung tools do not use up the threads other tools need; an async tool that
  ignores its cancellation cannot hang the turn.
- An exception whose ``__str__`` raises, and results holding ``nan`` or infinities, still give a clear result (valid
  JSON for the latter); so does one whose ``__str__`` (or an argument's ``repr``) raises a `BaseException`, and a
  result whose ``repr`` does (issue 31).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pydantic
import pytest

from threadline import AssistantMessage, Conversation, MessageList, ToolMessage, UserMessage, llm, tool
from threadline.testing import ScriptedModel

from ._support import call, calls
from .test_tool_errors import run_bad_call


# -- BaseExceptions -------------------------------------------------------------------------------------------------
class Abort(BaseException):
    """A BaseException that is neither KeyboardInterrupt nor a cancellation."""


def test_system_exit_in_a_sync_tool_is_an_error_result() -> None:
    def quit_now(code: int) -> str:
        """Calls sys.exit, as a careless script would."""
        sys.exit(code)

    result, _, _ = run_bad_call(call("quit_now", {"code": 3}), quit_now)
    assert (result.content, result.is_error) == ("Tool 'quit_now' failed: SystemExit: 3", True)


def test_system_exit_in_an_async_tool_is_an_error_result() -> None:
    async def quit_now() -> str:
        await asyncio.sleep(0)
        raise SystemExit("bye")

    result, _, _ = run_bad_call(call("quit_now"), quit_now)
    assert (result.content, result.is_error) == ("Tool 'quit_now' failed: SystemExit: bye", True)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("exception", [Abort("custom"), GeneratorExit()], ids=["custom", "GeneratorExit"])
def test_other_base_exceptions_are_error_results(exception: BaseException, is_async: bool) -> None:
    def sync_tool() -> str:
        raise exception

    async def async_tool() -> str:
        raise exception

    handler = tool(async_tool if is_async else sync_tool, name="fragile")
    result, _, _ = run_bad_call(call("fragile"), handler)
    assert result.is_error
    assert result.content.startswith(f"Tool 'fragile' failed: {type(exception).__name__}")


def test_an_async_tool_raising_cancelled_error_itself_is_an_error_result() -> None:
    async def upstream() -> str:
        raise asyncio.CancelledError  # e.g. something the tool awaited was cancelled

    result, _, _ = run_bad_call(call("upstream"), upstream)
    assert (result.content, result.is_error) == ("Tool 'upstream' failed: CancelledError", True)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_keyboard_interrupt_in_a_tool_stops_the_turn_and_the_call_is_answered_next_run(is_async: bool) -> None:
    def sync_tool() -> str:
        raise KeyboardInterrupt

    async def async_tool() -> str:
        raise KeyboardInterrupt

    model = ScriptedModel([calls(call("stop", id="c1")), "after the repair"])
    builder = llm.model(model).tools(tool(async_tool if is_async else sync_tool, name="stop"))
    conversation = builder.request("go").prompt_conversation()
    with pytest.raises(KeyboardInterrupt):
        conversation.continuation.prompt()  # the armed turn, run from sync code as a script would
    # The turn stopped right after the call was logged: no result, no further request.
    assert len(model.requests) == 1
    assert [type(m) for m in conversation.messages] == [UserMessage, AssistantMessage]
    assert conversation.messages.pending_tool_calls()

    assert conversation.continuation.prompt() == "after the repair"
    repaired = conversation.messages[2]
    assert isinstance(repaired, ToolMessage) and repaired.tool_call_id == "c1" and repaired.is_error
    assert repaired.content.startswith("interrupted")
    conversation.messages.validate()


async def test_cancelling_the_turn_while_a_sync_tool_runs_stops_the_turn_at_once() -> None:
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(30)
        return "late"

    model = ScriptedModel([calls(call("slow", id="c1")), "after the repair"])
    conversation = llm.model(model).tools(slow).request("go").prompt_conversation()

    async def drive() -> None:
        async for _ in conversation:
            pass

    try:
        task = asyncio.ensure_future(drive())
        await asyncio.to_thread(started.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task  # returns at once: the turn does not wait for the thread
        assert not release.is_set()
        assert conversation.messages.pending_tool_calls()
    finally:
        release.set()
    answer = await conversation.continuation.request("again").prompt_async()
    assert answer == "after the repair"
    assert conversation.messages[2].content.startswith("interrupted")
    conversation.messages.validate()


# -- timeouts -------------------------------------------------------------------------------------------------------
def test_an_async_tool_ignoring_its_cancellation_cannot_hang_the_turn() -> None:
    release, turn_over = threading.Event(), threading.Event()
    ignored: list[int] = []

    @tool(timeout=0.2)
    async def stubborn() -> str:
        while not release.is_set():
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                ignored.append(1)  # and carries on
        return "late"

    model = ScriptedModel([calls(call("stubborn")), "went on without it"])
    conversation = llm.model(model).tools(stubborn).request("go").prompt_conversation()

    async def drive() -> None:
        async for _ in conversation:
            pass
        turn_over.set()
        # asyncio.run cancels and awaits every task left on its loop: that part is the caller's own loop
        # shutting down, so the test lets the tool end before it.
        release.set()

    runner = threading.Thread(target=asyncio.run, args=(drive(),), daemon=True)
    runner.start()
    finished = turn_over.wait(60)  # generous: the turn itself takes the timeout plus a bounded grace
    release.set()
    runner.join(10)
    assert finished, "the turn waited for a tool that ignores its cancellation"
    assert ignored, "the tool was cancelled"
    result = conversation.messages[2]
    assert isinstance(result, ToolMessage)
    assert (result.content, result.is_error) == (
        "Tool 'stubborn' did not finish in 0.2 s; it may still be running.",
        True,
    )
    assert conversation.text == "went on without it"
    conversation.messages.validate()


def test_hung_sync_tools_do_not_use_up_the_threads_other_tools_need() -> None:
    release = threading.Event()
    hung = 12  # more than asyncio's default executor has threads on this machine (min(32, cores + 4))

    def stuck(n: int) -> str:
        release.wait(60)
        return "late"

    def quick() -> str:
        return "quick answer"

    try:
        model = ScriptedModel([calls(*(call("stuck", {"n": n}) for n in range(hung))), calls(call("quick")), "done"])
        conversation = llm.model(model).tools(stuck, quick).request("go").prompt_conversation()
        assert conversation.continuation.prompt(tool_timeout=0.5) == "done"
    finally:
        release.set()
    results = [m for m in conversation.messages if isinstance(m, ToolMessage)]
    assert [r.content for r in results[:hung]] == [
        "Tool 'stuck' did not finish in 0.5 s; it may still be running."
    ] * hung
    assert (results[-1].content, results[-1].is_error) == ("quick answer", False)


HUNG_TOOL_SCRIPT = """
import time
from threadline import llm
from threadline.testing import ScriptedModel
from threadline import AssistantMessage, ToolCall

def hang() -> str:
    \"\"\"Never returns in time.\"\"\"
    time.sleep(3600)
    return "late"

model = ScriptedModel([AssistantMessage(tool_calls=[ToolCall(id="c1", name="hang", arguments={})]), "done"])
conversation = llm.model(model).tools(hang).request("go").prompt_conversation()
print(conversation.continuation.prompt(tool_timeout=0.5))
print(conversation.messages[2].content, flush=True)
"""


def test_a_sync_tool_past_its_timeout_does_not_keep_the_process_alive(tmp_path: Path) -> None:
    script = tmp_path / "hung.py"
    script.write_text(HUNG_TOOL_SCRIPT, encoding="utf-8")
    # The tool sleeps an hour; the process must end right after its turn (the timeout is generous for a loaded
    # machine, and far below the hour the old thread kept the interpreter waiting).
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["done", "Tool 'hang' did not finish in 0.5 s; it may still be running."]
    assert done.stderr == ""


# -- results and errors that resist being shown ----------------------------------------------------------------------
class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message either")


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_an_exception_whose_str_raises_is_a_clear_error_result(is_async: bool) -> None:
    def sync_tool() -> str:
        raise Unprintable

    async def async_tool() -> str:
        raise Unprintable

    result, _, _ = run_bad_call(call("odd"), tool(async_tool if is_async else sync_tool, name="odd"))
    assert (result.content, result.is_error) == (
        "Tool 'odd' failed: Unprintable (its message could not be read)",
        True,
    )


class ReadingItStops(Exception):
    """An exception whose message cannot be read: reading it raises a `BaseException` (set per test)."""

    raised: BaseException = SystemExit("from __str__")

    def __str__(self) -> str:
        raise self.raised


class BadRepr:
    def __init__(self, raised: BaseException) -> None:
        self.raised = raised

    def __repr__(self) -> str:
        raise self.raised


READING_RAISES = [
    SystemExit("from __str__"),
    KeyboardInterrupt(),
    Abort("custom"),
    GeneratorExit(),
    asyncio.CancelledError(),
]
READING_IDS = ["SystemExit", "KeyboardInterrupt", "BaseException", "GeneratorExit", "CancelledError"]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("raised", READING_RAISES, ids=READING_IDS)
def test_an_exception_whose_str_raises_a_base_exception_is_a_clear_error_result(
    raised: BaseException, is_async: bool
) -> None:
    # Issue 31: SystemExit raised by __str__ ended the turn unanswered. Raised while its message is read, even a
    # KeyboardInterrupt is not the tool's Ctrl-C: the result says the message could not be read.
    class Unreadable(ReadingItStops):
        pass

    Unreadable.raised = raised

    def sync_tool() -> str:
        raise Unreadable

    async def async_tool() -> str:
        raise Unreadable

    result, _, conversation = run_bad_call(call("odd"), tool(async_tool if is_async else sync_tool, name="odd"))
    assert (result.content, result.is_error) == ("Tool 'odd' failed: Unreadable (its message could not be read)", True)
    assert conversation.text == "Sorry about that."
    conversation.messages.validate()


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("raised", READING_RAISES, ids=READING_IDS)
def test_an_exception_whose_arguments_repr_raises_is_a_clear_error_result(
    raised: BaseException, is_async: bool
) -> None:
    # An exception with several arguments shows their repr: one that raises makes the message unreadable.
    def sync_tool() -> str:
        raise ValueError(BadRepr(raised), 2)

    async def async_tool() -> str:
        raise ValueError(BadRepr(raised), 2)

    result, _, conversation = run_bad_call(call("odd"), tool(async_tool if is_async else sync_tool, name="odd"))
    assert (result.content, result.is_error) == ("Tool 'odd' failed: ValueError (its message could not be read)", True)
    conversation.messages.validate()


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("raised", READING_RAISES, ids=READING_IDS)
def test_a_result_whose_repr_raises_is_a_clear_error_result(raised: BaseException, is_async: bool) -> None:
    # A value JSON cannot hold is sent as its repr; one whose repr raises cannot be encoded at all.
    def sync_tool() -> Any:
        return {"value": BadRepr(raised)}

    async def async_tool() -> Any:
        return {"value": BadRepr(raised)}

    result, _, conversation = run_bad_call(call("odd"), tool(async_tool if is_async else sync_tool, name="odd"))
    assert result.is_error
    assert result.content.startswith(f"Tool 'odd' returned a value that cannot be encoded: {type(raised).__name__}")
    conversation.messages.validate()


class Reading(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(ser_json_inf_nan="constants")  # pydantic would write a bare NaN

    value: float


def strict_json(text: str) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"invalid JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (float("nan"), "NaN"),
        ({"high": float("inf"), "low": float("-inf"), "ok": 1.5}, {"high": "Infinity", "low": "-Infinity", "ok": 1.5}),
        ([1.0, float("nan"), "NaN is a word"], [1.0, "NaN", "NaN is a word"]),
        (Reading(value=float("nan")), {"value": "NaN"}),
    ],
    ids=["nan", "infinities", "list", "pydantic-constants"],
)
def test_nan_and_infinity_in_a_result_are_sent_as_valid_json(value: Any, expected: Any) -> None:
    def measure() -> Any:
        return value

    result, model, _ = run_bad_call(call("measure"), measure)
    assert not result.is_error
    assert strict_json(result.content) == expected
    # What the model was sent parses as JSON too.
    assert strict_json(model.requests[1].messages[-1].content) == expected


def test_a_conversation_with_a_nan_result_serializes_and_reloads() -> None:
    def measure() -> float:
        return float("nan")

    _, _, conversation = run_bad_call(call("measure"), measure)
    restored = Conversation(messages=MessageList.from_json(conversation.messages.to_json()))
    restored.messages.validate()
    assert restored.messages[2].content == '"NaN"'


class Listing(pydantic.BaseModel):
    files: list[str]


@pytest.mark.parametrize(
    "value",
    [
        {"files": ["report-\udcff.txt"]},
        {"report-\udcff.txt": 1},
        ["a", "report-\udcff.txt"],
        Listing(files=["report-\udcff.txt"]),
    ],
    ids=["value", "key", "list", "pydantic"],
)
def test_a_lone_surrogate_inside_a_structured_result_follows_the_text_rule(value: Any) -> None:
    # Found by the fault campaign (tests/faults): a str result was cleaned, but {"files": os.listdir(path)} with a
    # name that is not UTF-8 became the error result "returned a value that cannot be encoded".
    def list_files() -> Any:
        return value

    result, model, _ = run_bad_call(call("list_files"), list_files)
    assert not result.is_error, result.content
    decoded = json.loads(result.content)
    assert "report-\ufffd.txt" in json.dumps(decoded, ensure_ascii=False)
    assert model.requests[1].messages[-1].content == result.content
