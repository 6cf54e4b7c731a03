"""The lifetime of an MCP connection: one server process per toolset, reused across turns whatever runs them (the
synchronous API on its per-thread loop, ``asyncio.run`` loops, other threads), concurrent calls on it, cancellation
of a cancelled turn, and no server left running after ``close()``, garbage collection or interpreter
exit (checked in the process table)."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from typing import Any

import pytest

from threadline import AssistantMessage, ToolCall, ToolMessage, Toolset, llm
from threadline.testing import ScriptedModel

from .conftest import DEMO_SERVER, Servers, marks, toolset_processes, wait_gone


def pid_call(id: str = "c1") -> AssistantMessage:
    return AssistantMessage(tool_calls=[ToolCall(id=id, name="Demo.pid", arguments={})])


def pid_of_turn(toolset: Any) -> int:
    model = ScriptedModel([pid_call(), "ok"])
    conversation = llm.model(model).tools(toolset).request("pid?").prompt_conversation()
    conversation.continuation.prompt()
    (result,) = [m for m in conversation.messages if isinstance(m, ToolMessage)]
    assert not result.is_error, result.content
    return int(result.content)


async def pid_of_async_turn(toolset: Any) -> int:
    model = ScriptedModel([pid_call(), "ok"])
    conversation = llm.model(model).tools(toolset).request("pid?").prompt_conversation()
    messages = [message async for message in conversation]
    (result,) = [m for m in messages if isinstance(m, ToolMessage)]
    return int(result.content)


def test_one_server_serves_every_turn_from_any_loop_or_thread(servers: Servers) -> None:
    demo = servers.demo()
    mark = servers.made[-1][1]
    first = pid_of_turn(demo)
    assert pid_of_turn(demo) == first  # the sync API, next turn
    assert asyncio.run(pid_of_async_turn(demo)) == first  # a loop of the caller's
    assert asyncio.run(pid_of_async_turn(demo)) == first  # and another one, after the first was closed
    seen: list[int] = []
    worker = threading.Thread(target=lambda: seen.append(pid_of_turn(demo)))
    worker.start()
    worker.join(60)
    assert seen == [first]  # another thread's private loop
    assert toolset_processes(mark) == [first]


def test_concurrent_calls_share_the_connection(servers: Servers) -> None:
    demo = servers.demo()
    model = ScriptedModel(
        [
            AssistantMessage(
                tool_calls=[
                    ToolCall(id="slow", name="Demo.hang", arguments={"seconds": 0.5}),
                    ToolCall(id="fast", name="Demo.add", arguments={"a": 1, "b": 2}),
                    ToolCall(id="pid", name="Demo.pid", arguments={}),
                ]
            ),
            "ok",
        ]
    )
    conversation = llm.model(model).tools(demo).request("go").prompt_conversation()
    conversation.continuation.prompt()
    results = [m for m in conversation.messages if isinstance(m, ToolMessage)]
    assert [(r.tool_call_id, r.content, r.is_error) for r in results[:2]] == [
        ("slow", "woke up", False),
        ("fast", "3", False),
    ]
    assert not results[2].is_error


def test_a_cancelled_turn_cancels_the_call_on_the_server_and_the_session_lives_on(
    servers: Servers, tmp_path: Any
) -> None:
    demo = servers.demo()
    before = pid_of_turn(demo)
    note = tmp_path / "note.txt"
    model = ScriptedModel(
        [AssistantMessage(tool_calls=[ToolCall(id="h", name="Demo.hang", arguments={"note": str(note)})]), "ok"]
    )

    async def cancelled_turn() -> None:
        conversation = llm.model(model).tools(demo).request("wait").prompt_conversation()

        async def drive() -> None:
            async for _ in conversation:
                pass

        with pytest.raises(TimeoutError):
            await asyncio.wait_for(drive(), 1.5)

    asyncio.run(cancelled_turn())
    deadline = time.monotonic() + 10
    while not note.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert note.read_text(encoding="utf-8") == "cancelled"  # the server was told, and stopped the call
    assert pid_of_turn(demo) == before


def test_closing_during_a_call_answers_the_call_with_an_error(servers: Servers) -> None:
    demo = servers.demo().connect()
    model = ScriptedModel([AssistantMessage(tool_calls=[ToolCall(id="h", name="Demo.hang", arguments={})]), "ok"])
    conversation = llm.model(model).tools(demo).request("wait").prompt_conversation()
    closer = threading.Timer(1.5, demo.close)
    closer.start()
    conversation.continuation.prompt()
    closer.join()
    (result,) = [m for m in conversation.messages if isinstance(m, ToolMessage)]
    assert result.is_error and "was closed during the call" in result.content
    assert not demo.connected


def test_a_collected_toolset_stops_its_server(servers: Servers) -> None:
    mark = uuid.uuid4().hex
    demo = Toolset.from_mcp([sys.executable, str(DEMO_SERVER)], env=marks(mark))
    pid = pid_of_turn(demo)
    del demo
    gc.collect()
    assert wait_gone(pid, 15)
    assert toolset_processes(mark) == []


def test_a_server_left_open_is_stopped_at_interpreter_exit_without_noise(tmp_path: Any) -> None:
    mark = uuid.uuid4().hex
    script = tmp_path / "leave_open.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            from threadline import AssistantMessage, ToolCall, Toolset, llm
            from threadline.testing import ScriptedModel

            demo = Toolset.from_mcp([sys.executable, {str(DEMO_SERVER)!r}], env={marks(mark)!r})
            model = ScriptedModel(
                [AssistantMessage(tool_calls=[ToolCall(id="c1", name="Demo.pid", arguments={{}})]), "ok"]
            )
            conversation = llm.model(model).tools(demo).request("pid?").prompt_conversation()
            conversation.continuation.prompt()
            print(conversation.messages[2].content, flush=True)
            # No close(): the atexit hook must stop the server.
            """
        ),
        encoding="utf-8",
    )
    done = subprocess.run([sys.executable, "-W", "error", str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no warning, no "event loop is closed", no "Task was destroyed"
    pid = int(done.stdout.strip())
    assert wait_gone(pid, 0)
    assert toolset_processes(mark) == []
