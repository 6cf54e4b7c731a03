"""A process running tool-loop turns through the sync API until Ctrl-C (run by ``interrupts.py``).

Usage: python _interrupt_child.py STORE_URL CONVERSATION_ID SEED

It prints ``ready`` once the store is open, then, after each turn, the id of every message the conversation holds
that it has not printed yet. Turns alternate at random between ``prompt()`` and a ``for`` over ``stream()``: a
question, one to three tool calls (sync and async tools that take a few milliseconds), sometimes a second round,
then a streamed answer. The parent sends SIGINT at a random moment; the child then prints ``interrupted`` and the
ids the conversation holds now (its partial answer or failure included), and exits 0.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from typing import Any

from threadline import AssistantMessage, Conversation, ToolCall, ToolMessage, UserMessage
from threadline.store import open_store
from threadline.testing import ScriptedModel, ScriptedRequest

url, conversation_id, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(seed)


def lookup(city: str) -> str:
    """Weather in a city (a sync tool)."""
    time.sleep(rng.uniform(0, 0.03))
    return f"sunny in {city}"


async def forecast(city: str) -> str:
    """Forecast for a city (an async tool)."""
    await asyncio.sleep(rng.uniform(0, 0.03))
    return f"rain tomorrow in {city}"


def answer(request: ScriptedRequest) -> Any:
    last = request.messages[-1]
    if isinstance(last, UserMessage) or (isinstance(last, ToolMessage) and rng.random() < 0.3):
        count = rng.randint(1, 3)
        return AssistantMessage(
            content=rng.choice([None, "Let me check."]),
            tool_calls=[
                ToolCall(id="", name=rng.choice(["lookup", "forecast"]), arguments={"city": f"c{k}"})
                for k in range(count)
            ],
        )
    return "It is sunny in most places, and it will rain tomorrow. " * rng.randint(1, 4)


def report(conversation: Conversation, printed: set[str]) -> None:
    for message in conversation.messages:
        if message.id not in printed:
            printed.add(message.id)
            print(message.id, flush=True)


with open_store(url) as store:
    conversation = Conversation.load(conversation_id, store)
    printed = {message.id for message in conversation.messages}
    model = ScriptedModel([answer] * 100_000)
    print("ready", flush=True)
    try:
        for number in range(100_000):
            turn = conversation.continuation.model(model).tools(lookup, forecast).request(f"q{number}")
            if rng.random() < 0.5:
                turn.prompt()
            else:
                for _piece in turn.stream():
                    pass
            report(conversation, printed)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        report(conversation, printed)
# Exit 0 said explicitly: CPython 3.11 ends a program with SIGINT's status (130) when a KeyboardInterrupt it caught
# had passed through exec() of a string, as dataclasses and pydantic do when first imported (a Ctrl-C during the
# first turn's lazy imports), although the program handled it.
sys.exit(0)
