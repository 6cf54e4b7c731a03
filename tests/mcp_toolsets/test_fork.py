"""MCP toolsets in a forked child (``os.fork``, multiprocessing's "fork"): the child does not share its parent's
connection, whose thread is not there. A call from the child starts a server of the child's own and is answered at
once (before, it waited the timeout plus 5 s, then failed generically); a child that never uses the toolset exits at
once (before, its exit hook waited ~10 s on the parent's loop); the parent's server is neither used nor stopped.

Each scenario runs in a fresh interpreter, so the fork happens outside pytest (a forked pytest would run on). Its
turns run under ``asyncio.run``, not the sync API: a child's exit closes the sync API's private loops it inherited,
which unregisters their wake-up pipes from the epoll instance the parent shares with it, so the parent's next sync
turn no longer wakes for call results (a defect of ``threadline._sync``, not of the MCP toolset)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

from .conftest import DEMO_SERVER, marks

SETUP = """
import asyncio, json, os, sys, time, warnings
from threadline import AssistantMessage, ToolCall, ToolMessage, Toolset, llm
from threadline.testing import ScriptedModel

toolset = Toolset.from_mcp(command=[sys.executable, DEMO_SERVER], name="Demo", timeout=TIMEOUT, env=MARKS)

def pid_call():
    # On a loop of its own, closed before any fork: see the note on threadline._sync in test_fork's docstring.
    call = AssistantMessage(tool_calls=[ToolCall(id="c1", name="Demo.pid", arguments={})])
    conversation = llm.model(ScriptedModel([call, "done"])).tools(toolset).request("go").prompt_conversation()
    asyncio.run(conversation.continuation.prompt_async())
    (result,) = [m for m in conversation.messages if isinstance(m, ToolMessage)]
    return {"is_error": result.is_error, "content": result.content}

def fork():
    with warnings.catch_warnings():  # Python 3.12+ warns that the process has threads
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()

def report(**items):
    print(json.dumps(items), flush=True)
"""


def run(scenario: str, timeout: float = 3) -> list[dict[str, Any]]:
    """Run SETUP + ``scenario`` in a fresh interpreter; the JSON lines it printed."""
    prelude = f"DEMO_SERVER = {str(DEMO_SERVER)!r}\nTIMEOUT = {timeout!r}\nMARKS = {marks('fork')!r}\n"
    code = prelude + SETUP + textwrap.dedent(scenario)
    env = {**os.environ, "THREADLINE_HOME": os.environ.get("THREADLINE_HOME", "")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_a_forked_child_calls_the_toolset_through_a_server_of_its_own() -> None:
    parent, child, again = run(
        """
        report(who="parent", **pid_call())
        pid = fork()
        if pid == 0:
            started = time.monotonic()
            result = pid_call()
            report(who="child", seconds=time.monotonic() - started, **result)
            sys.exit(0)  # the exit hook stops the child's own server
        os.waitpid(pid, 0)
        report(who="parent again", **pid_call())
        toolset.close()
        """
    )
    assert [parent["who"], child["who"], again["who"]] == ["parent", "child", "parent again"]
    assert not parent["is_error"] and not child["is_error"], child
    assert child["content"] != parent["content"]  # another server process: the child's
    assert child["seconds"] < 3  # not the parent's dead connection, waited on until the timeout
    assert not again["is_error"] and again["content"] == parent["content"]  # the parent's server: not stopped


def test_a_forked_child_that_never_uses_the_toolset_exits_at_once() -> None:
    child, parent = run(
        """
        toolset.connect()
        before = pid_call()["content"]
        pid = fork()
        if pid == 0:
            report(who="child")
            sys.exit(0)  # a normal exit: the atexit hooks run
        started = time.monotonic()
        os.waitpid(pid, 0)
        report(who="parent", exit_seconds=time.monotonic() - started, connected=toolset.connected,
               same=pid_call()["content"] == before)
        toolset.close()
        """
    )
    assert child == {"who": "child"}
    assert parent["exit_seconds"] < 5, parent  # it was ~10 s: the exit hook waited on the parent's loop
    assert parent["connected"] and parent["same"]
