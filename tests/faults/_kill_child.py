"""A process running tool-loop turns on one stored conversation until it is killed (run by ``processes.py``).

Usage: python _kill_child.py STORE_URL CONVERSATION_ID SEED

It prints ``ready`` once the store is open, then the id of every message as soon as the conversation holds it (a
message is in memory only once the store has it), one line each; the parent kills it with SIGKILL at a random moment
and checks that every id printed is in the store. Turns: a question, one to three tool calls (sync and async tools
that take a few milliseconds), sometimes a second round, then a streamed answer.
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


async def main() -> None:
    with open_store(url) as store:
        conversation = Conversation.load(conversation_id, store)
        printed = {message.id for message in conversation.messages}
        print("ready", flush=True)
        model = ScriptedModel([answer] * 100_000)
        for number in range(100_000):
            armed = conversation.continuation.model(model).tools(lookup, forecast).request(f"q{number}")
            conversation = armed.prompt_conversation()
            async for _message in conversation:
                for message in conversation.messages:
                    if message.id not in printed:
                        printed.add(message.id)
                        print(message.id, flush=True)


asyncio.run(main())
