"""A forked child that used (or merely inherited) the sync API's private event loop leaves its parent's loop alone.

The child's copy of the loop shares the parent's epoll instance (a fork shares it): before, a child that exited
normally closed its inherited loop at exit, which unregistered the loop's wake-up socket from that shared instance,
and the parent's next sync turn no longer woke when a sync tool's result arrived (it waited out the tool timeout).
Run in a subprocess, so that forking happens outside pytest and a hang cannot hang the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import os, sys
from threadline import AssistantMessage, ToolCall, llm
from threadline.testing import ScriptedModel


def lookup(city: str) -> str:
    "Look a city up."
    return f"{city}: found"


def turn(tag: str) -> str:
    call = AssistantMessage(tool_calls=[ToolCall(id=f"c-{tag}", name="lookup", arguments={"city": tag})])
    model = ScriptedModel([call, lambda request: request.messages[-1].content])
    return llm.model(model).tools(lookup).request("Find it.").prompt(tool_timeout=5)


print("parent before:", turn("Paris"), flush=True)
pid = os.fork()
if pid == 0:
    if sys.argv[1] == "uses":
        print("child:", turn("Lyon"), flush=True)
    sys.exit(0)  # a normal exit: atexit handlers run in the child
os.waitpid(pid, 0)
print("parent after:", turn("Rome"), flush=True)
"""


def _run(tmp_path: Path, how: str) -> list[str]:
    script = tmp_path / "fork_child.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), how], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_a_child_that_only_exits_leaves_the_parents_sync_loop_working(tmp_path: Path) -> None:
    assert _run(tmp_path, "exits") == ["parent before: Paris: found", "parent after: Rome: found"]


def test_a_child_that_runs_its_own_sync_turn_leaves_the_parents_sync_loop_working(tmp_path: Path) -> None:
    assert _run(tmp_path, "uses") == [
        "parent before: Paris: found",
        "child: Lyon: found",
        "parent after: Rome: found",
    ]
