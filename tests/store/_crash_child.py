"""A real tool loop that is killed with SIGKILL at one persistence point (run by test_crash.py as a subprocess).

Usage: python _crash_child.py STORE_URL CONVERSATION_ID POINT

POINT is where the process dies:
  before_assistant  while the model is producing the tool-call message (nothing of it is stored yet)
  after_assistant   when the first tool starts (the assistant tool-call message is stored, no result yet)
  between_results   once the first tool result is stored, while the second tool is still running
  during_final      after the first streamed piece of the final answer
  none              not at all: the turn completes
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time

from threadline import AssistantMessage, ToolCall, ToolMessage, llm
from threadline.store import open_store
from threadline.testing import ScriptedModel, ScriptedRequest

url, conversation_id, point = sys.argv[1:4]


def die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def lookup(city: str) -> str:
    """Weather in a city (fast)."""
    if point == "after_assistant":
        die()
    return f"sunny in {city}"


async def slow_lookup(city: str) -> str:
    """Weather in a city (slow)."""
    if point == "between_results":
        # Die only once the first result is durable: another connection must be able to read it.
        with open_store(url) as reader:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if any(isinstance(m, ToolMessage) and m.tool_call_id == "call_a" for m in reader.load(conversation_id)):
                    die()
                await asyncio.sleep(0.01)
        sys.exit(3)  # the first result never became visible: the test fails on this exit code
    return f"rainy in {city}"


def tool_calls(request: ScriptedRequest) -> AssistantMessage:
    if point == "before_assistant":
        die()
    return AssistantMessage(
        tool_calls=[
            ToolCall(id="call_a", name="lookup", arguments={"city": "Paris"}),
            ToolCall(id="call_b", name="slow_lookup", arguments={"city": "Rome"}),
        ]
    )


model = ScriptedModel([tool_calls, "Paris is sunny and Rome is rainy."])
with open_store(url) as store:
    builder = (
        llm.model(model)
        .tools(lookup, slow_lookup)
        .store(store)
        .conversation_id(conversation_id)
        .request("Weather in Paris and Rome?")
    )
    if point == "during_final":
        # on_text runs inside the model call as each piece streams in, before the answer is complete.
        conversation = builder.prompt_conversation()

        async def drive() -> None:
            async for _message in conversation.run(on_text=lambda piece: die()):
                pass

        asyncio.run(drive())
    else:
        print(builder.prompt())
