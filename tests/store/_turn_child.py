"""A process running tool turns on one stored conversation, run by test_turn_lease.py next to others.

Usage:
  python _turn_child.py turns URL CONVERSATION NAME COUNT START_FILE
      COUNT turns, each "question -> tool call -> result -> answer", once START_FILE exists (so writers overlap).
  python _turn_child.py hold URL CONVERSATION
      one turn whose tool never returns: prints "in tool" once its call is stored, then waits to be killed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from threadline import AssistantMessage, Conversation, ConversationConfig, ToolCall, UserMessage
from threadline.store import open_store
from threadline.testing import ScriptedModel, ScriptedRequest

mode, url, conversation_id = sys.argv[1:4]


def pause(seconds: float) -> str:
    """Take a moment (long enough for the other writer to try to get in)."""
    time.sleep(seconds)
    return f"rested {seconds}"


def forever(seconds: float) -> str:
    """Never return: the process is killed in here."""
    print("in tool", flush=True)
    time.sleep(600)
    return "unreachable"


def answer(request: ScriptedRequest) -> Any:
    last = request.messages[-1]
    if isinstance(last, UserMessage):
        tool = "forever" if mode == "hold" else "pause"
        return AssistantMessage(tool_calls=[ToolCall(id="", name=tool, arguments={"seconds": 0.02})])
    return f"answer to {last.content}"


with open_store(url) as store:
    # Loaded before the other writers append: the turn must read what they added once it holds the lease.
    conversation = Conversation.load(conversation_id, store, ConversationConfig(busy_timeout=120))
    model = ScriptedModel([answer] * 1000)
    builder = conversation.continuation.model(model).tools(pause, forever)
    if mode == "hold":
        builder.request("hold it").prompt()
        sys.exit(5)  # unreachable: the tool never returns
    name, count, start = sys.argv[4], int(sys.argv[5]), Path(sys.argv[6])
    deadline = time.monotonic() + 60
    while not start.exists():
        if time.monotonic() > deadline:
            sys.exit(4)
        time.sleep(0.005)
    for index in range(count):
        text = builder.request(f"{name}-{index}").prompt()
        assert text.startswith("answer to rested"), text
