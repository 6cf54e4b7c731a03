"""generate_text benchmarks (docs/contributing.md#performance-targets), each against a floor measured in the same run.

1. **`request_hash` of a 1,000-message request** (target <= 1.5x): `threadline.request_hash(model=…, system=…,
   messages=…, tools=[…])` of a tool-using log of 1,000 messages, against ``hashlib.sha256(msgspec.json.encode(
   messages))`` of the same messages (which hashes ids and timestamps too, and checks nothing).

2. **`generate_text` cache hit on SQLite** (target <= 1.5x): a `generate_text` call whose finished result (a tool
   round: four messages) is in the SQLite store's request cache — hash the request, read the cache, rebuild the
   result — against a raw ``sqlite3`` primary-key ``SELECT`` of the same stored value on the same file plus its
   typed decode into message objects (``msgspec.json.decode(value, type=…)``), which is the least a hit can do.

3. **Engine overhead of a tool round** (target <= 1.1x): a `generate_text` call of ten tool rounds and a final
   answer on a `ScriptedModel`, against a `Conversation` turn on the same script, tool and model (the same engine
   driven by another host). The ratio is of whole calls, so it charges generate_text's own work (checking and
   hashing the input, the in-flight table, the result) to its rounds.

Run: python bench/bench_generate.py [--quick]
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, print_table, record, timeit
from threadline import (
    AssistantMessage,
    Conversation,
    ConversationConfig,
    Tool,
    ToolCall,
    ToolMessage,
    UserMessage,
    generate_text,
    open_store,
    request_hash,
)
from threadline.messages import Message
from threadline.testing import ScriptedModel

QUICK = "--quick" in sys.argv
TARGET_HASH = 1.5
TARGET_CACHE = 1.5
TARGET_ENGINE = 1.1
ROUNDS = 10


def get_weather(city: str) -> str:
    """Current weather in a city.

    Args:
        city: The city name.
    """
    return f"22 C and sunny in {city}"


def tool_log(n: int) -> list[Message]:
    """Questions, tool calls, results and answers: the mix of a tool-using conversation."""
    out: list[Message] = []
    for i in range(n // 4):
        out.append(UserMessage(content=f"Question {i}: what is the weather in city {i} today; do I need an umbrella?"))
        call = ToolCall(id=f"call_{i}", name="get_weather", arguments={"city": f"city {i}"})
        out.append(AssistantMessage(tool_calls=[call], model="openai:gpt-4o-mini"))
        out.append(ToolMessage(tool_call_id=call.id, tool_name="get_weather", content=f"22 C and sunny in city {i}"))
        out.append(AssistantMessage(content=f"It is 22 C and sunny in city {i}; no umbrella needed."))
    return out


# -- 1. request_hash --------------------------------------------------------------------------------------------
def bench_hash() -> dict[str, Any]:
    messages = tool_log(1000)
    repeat, number = (7, 20) if QUICK else (15, 50)
    floor = timeit(lambda: hashlib.sha256(msgspec.json.encode(messages)).hexdigest(), repeat=repeat, number=number)
    ours = timeit(
        lambda: request_hash(model="openai:gpt-4o-mini", system="Be terse.", messages=messages, tools=[get_weather]),
        repeat=repeat,
        number=number,
    )
    return {"floor_us": median(floor) * 1e6, "request_hash_us": median(ours) * 1e6}


# -- 2. cache hit -----------------------------------------------------------------------------------------------
class _Usage(msgspec.Struct):
    input_tokens: int = 0
    output_tokens: int = 0


class _Cached(msgspec.Struct):
    """The stored result, decoded into message objects (the floor's typed decode)."""

    text: str
    stop_reason: str
    usage: _Usage
    new_count: int
    messages: list[Message]
    steps: list[dict[str, Any]]


def bench_cache() -> dict[str, Any]:
    directory = tempfile.mkdtemp(prefix="bench-generate-")
    path = Path(directory) / "cache.db"
    store = open_store(f"sqlite:///{path}")
    script = [
        AssistantMessage(tool_calls=[ToolCall(id="w1", name="get_weather", arguments={"city": "Paris"})]),
        "Sunny.",
    ]
    kwargs: dict[str, Any] = {"system": "Be terse.", "prompt": "Weather in Paris?", "tools": [get_weather]}
    number = 200 if QUICK else 1000

    async def main() -> tuple[list[float], str]:
        first = await generate_text(model=ScriptedModel(script), cache=store, **kwargs)
        assert not first.cached
        empty = ScriptedModel()
        timings = []
        for _ in range(7 if QUICK else 15):
            start = time.perf_counter()
            for _ in range(number):
                hit = await generate_text(model=empty, cache=store, **kwargs)
            timings.append((time.perf_counter() - start) / number)
            assert hit.cached and hit.text == "Sunny." and not empty.requests
        return timings, first.request_hash

    ours, key = asyncio.run(main())
    store.close()

    conn = sqlite3.connect(path)
    cache_key = f"generate_text/2:{key}"
    decoder = msgspec.json.Decoder(_Cached)

    def raw() -> None:
        row = conn.execute("SELECT value FROM cache WHERE key = ?", (cache_key,)).fetchone()
        decoded = decoder.decode(row[0])
        assert decoded.text == "Sunny."

    floor = timeit(raw, repeat=7 if QUICK else 15, number=number)
    conn.close()
    return {"floor_us": median(floor) * 1e6, "cache_hit_us": median(ours) * 1e6}


# -- 3. engine overhead per tool round --------------------------------------------------------------------------
def rounds_script() -> list[Any]:
    calls = [
        AssistantMessage(tool_calls=[ToolCall(id=f"call_{i}", name="get_weather", arguments={"city": f"city {i}"})])
        for i in range(ROUNDS)
    ]
    return [*calls, "Every city is sunny."]


def bench_engine() -> dict[str, Any]:
    tool = Tool(get_weather)
    turns = 60 if QUICK else 300

    async def conversation_turn() -> float:
        model = ScriptedModel(rounds_script())
        conversation = Conversation(
            messages=[UserMessage(content="Weather everywhere?")], config=ConversationConfig(model=model, tools=[tool])
        )
        start = time.perf_counter()
        async for _ in conversation.run():
            pass
        elapsed = time.perf_counter() - start
        assert len(model.requests) == ROUNDS + 1
        return elapsed

    async def generate_call() -> float:
        model = ScriptedModel(rounds_script())
        start = time.perf_counter()
        result = await generate_text(model=model, messages=[UserMessage(content="Weather everywhere?")], tools=[tool])
        elapsed = time.perf_counter() - start
        assert len(result.steps) == ROUNDS + 1
        return elapsed

    async def main() -> tuple[list[float], list[float]]:
        for _ in range(20):  # warm up: caches, pydantic validators, the worker threads
            await conversation_turn()
            await generate_call()
        conv, gen = [], []
        for _ in range(turns):  # interleaved, so both see the same machine
            conv.append(await conversation_turn())
            gen.append(await generate_call())
        return conv, gen

    gc.collect()
    conv, gen = asyncio.run(main())
    return {
        "conversation_turn_us_per_round": median(conv) / ROUNDS * 1e6,
        "generate_text_us_per_round": median(gen) / ROUNDS * 1e6,
    }


def main() -> None:
    hashing = bench_hash()
    cache = bench_cache()
    engine = bench_engine()
    hash_ratio = hashing["request_hash_us"] / hashing["floor_us"]
    cache_ratio = cache["cache_hit_us"] / cache["floor_us"]
    engine_ratio = engine["generate_text_us_per_round"] / engine["conversation_turn_us_per_round"]
    rows = [
        ["request_hash, 1,000 messages", hashing["request_hash_us"], hashing["floor_us"], hash_ratio, TARGET_HASH],
        ["cache hit, SQLite", cache["cache_hit_us"], cache["floor_us"], cache_ratio, TARGET_CACHE],
        [
            "tool round, generate_text",
            engine["generate_text_us_per_round"],
            engine["conversation_turn_us_per_round"],
            engine_ratio,
            TARGET_ENGINE,
        ],
    ]
    table = [[*row, row[3] <= row[4]] for row in rows]
    print_table(
        "generate_text (µs; floor: sha256 of msgspec JSON / raw sqlite3 select + decode / Conversation turn)",
        ["operation", "threadline µs", "floor µs", "ratio", "target", "met"],
        table,
    )
    record(
        "bench_generate",
        {
            "request_hash": {**hashing, "ratio": hash_ratio, "target": TARGET_HASH},
            "cache_hit": {**cache, "ratio": cache_ratio, "target": TARGET_CACHE},
            "engine": {**engine, "ratio": engine_ratio, "target": TARGET_ENGINE},
        },
    )


if __name__ == "__main__":
    main()
