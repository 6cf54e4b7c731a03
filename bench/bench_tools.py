"""Tool benchmarks: an MCP tool call through threadline, and building a toolset from a 50-method object.

1. **MCP tool call overhead** (target <= 1.2x): one call of the ``echo`` tool of a stdio MCP server
   (``_mcp_echo_server.py``, written with the SDK's server API), made two ways in the same run against two instances
   of the same server started the same way:

   - floor: the bare SDK, ``await client.call_tool("echo", {...})`` on an open ``mcp.Client`` session, in the
     loop that opened it;
   - threadline: the engine's own path for a tool call, ``await execute_tool_call(call, tools, timeout)`` on a
     `Toolset.from_mcp` tool: the arguments checked against the server's schema, the call handed to the
     connection's own thread and loop (where the session lives) and back, the result mapped to text and wrapped in
     a `ToolMessage`.

   Samples of the two are interleaved (batches of calls), so both see the same machine state; the medians are
   compared. Shown too: the tool's handler awaited alone (the MCP part of the path, without the engine's own
   handling of a tool call), this process's CPU time per call (the server's is not counted), and the cost of a bare
   thread hop (``run_coroutine_threadsafe`` of a no-op to another thread's loop and back): two such hand-offs per
   call are the price of a session that any thread or loop can use, and on a loaded machine each one waits for the
   scheduler, so the wall-clock ratio grows with the load while the CPU ratio does not.

2. **`Toolset.from_object` on a 50-method object** (reported, no target): building the toolset (a `Tool` per public
   method: its signature read, a pydantic model made for its arguments, its JSON schema cleaned) and every tool's
   spec, for an object of a class never seen before, and again for the same object (what a tool learns from a
   signature is cached per function). Shown beside a floor measured in the same run: ``pydantic.create_model`` and
   ``model_json_schema`` for the same 50 signatures, written by hand.

Run: python bench/bench_tools.py [--quick]
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, print_table, record, timeit
from threadline import ToolCall, Toolset
from threadline.tools import execute_tool_call

SERVER = [sys.executable, str(Path(__file__).with_name("_mcp_echo_server.py"))]
TARGET = 1.2


async def mcp_call_overhead(batches: int, per_batch: int) -> dict[str, float]:
    from mcp import Client, StdioServerParameters

    toolset = Toolset.from_mcp(SERVER, name="Echo")
    await toolset.aconnect()
    tools = {tool.name: tool for tool in toolset}
    call = ToolCall(id="call_1", name="Echo.echo", arguments={"text": "hello"})
    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
    samples: dict[str, list[float]] = {
        kind: [] for kind in ("bare", "ours", "handler", "bare_cpu", "ours_cpu", "handler_cpu", "hop")
    }
    handler = tools["Echo.echo"].handler
    hop_loop = asyncio.new_event_loop()
    hop_thread = threading.Thread(target=hop_loop.run_forever, daemon=True)
    hop_thread.start()

    async def nothing() -> None:
        return None

    def measure(kind: str, fn: Any) -> Any:
        async def run() -> Any:
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(per_batch):
                out = await fn()
            samples[kind].append((time.perf_counter() - wall) / per_batch)
            samples[f"{kind}_cpu"].append((time.process_time() - cpu) / per_batch)
            return out

        return run()

    try:
        async with Client(params, cache=None) as client:
            await client.list_tools()
            for _ in range(20):  # warm both paths up
                await client.call_tool("echo", {"text": "hello"})
                await execute_tool_call(call, tools, 60.0)
            for _ in range(batches):
                result = await measure("bare", lambda: client.call_tool("echo", {"text": "hello"}))
                message = await measure("ours", lambda: execute_tool_call(call, tools, 60.0))
                text = await measure("handler", lambda: handler(text="hello"))
                start = time.perf_counter()
                for _ in range(per_batch):
                    await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(nothing(), hop_loop))
                samples["hop"].append((time.perf_counter() - start) / per_batch)
            assert result.content[0].text == "hello"
            assert message.content == "hello" and not message.is_error and text == "hello"
    finally:
        await toolset.aclose()
        hop_loop.call_soon_threadsafe(hop_loop.stop)
        hop_thread.join(10)
        hop_loop.close()
    bare, ours = median(samples["bare"]), median(samples["ours"])
    bare_cpu, ours_cpu = median(samples["bare_cpu"]), median(samples["ours_cpu"])
    return {
        "bare_us": bare * 1e6,
        "threadline_us": ours * 1e6,
        "ratio": ours / bare,
        "bare_cpu_us": bare_cpu * 1e6,
        "threadline_cpu_us": ours_cpu * 1e6,
        "cpu_ratio": ours_cpu / bare_cpu,
        "handler_us": median(samples["handler"]) * 1e6,
        "handler_ratio": median(samples["handler"]) / bare,
        "handler_cpu_us": median(samples["handler_cpu"]) * 1e6,
        "thread_hop_us": median(samples["hop"]) * 1e6,
    }


# -- Toolset.from_object ---------------------------------------------------------------------------------------------
_KINDS = [
    ("text: str", "text"),
    ("count: int, scale: float = 1.0", "count * scale"),
    ("flag: bool, names: list[str]", "names if flag else []"),
    ("city: str, days: int = 3, units: str = 'metric'", "city"),
    ("ids: list[int], note: str | None = None", "ids"),
]


def make_object() -> Any:
    """An object with 50 public methods of mixed signatures, each with a Google-style docstring."""
    source = ["class Service:", '    """A service with many handlers."""']
    for index in range(50):
        signature, body = _KINDS[index % len(_KINDS)]
        source += [
            f"    def handler_{index:02d}(self, {signature}):",
            f'        """Handler number {index}.',
            "",
            "        Args:",
            *[f"            {part.split(':')[0].strip()}: One argument." for part in signature.split(", ")],
            '        """',
            f"        return {body}",
        ]
    namespace: dict[str, Any] = {}
    exec("\n".join(source), namespace)  # a class as a user would write it, without 250 lines of it here
    return namespace["Service"]()


def hand_schemas(obj: Any) -> list[dict[str, Any]]:
    """The floor: a pydantic model and its JSON schema per method, by hand."""
    import inspect

    import pydantic

    out = []
    for name in dir(type(obj)):
        if name.startswith("_"):
            continue
        fields = {
            p.name: (p.annotation, ... if p.default is inspect.Parameter.empty else p.default)
            for p in inspect.signature(getattr(obj, name)).parameters.values()
        }
        out.append(pydantic.create_model(f"{name}_args", **fields).model_json_schema())  # type: ignore[call-overload]
    return out


def from_object_cost(repeat: int) -> dict[str, float]:
    warm_obj = make_object()

    def specs(obj: Any) -> list[Any]:
        return [tool.spec() for tool in Toolset.from_object(obj)]

    assert len(specs(warm_obj)) == 50 and len(hand_schemas(warm_obj)) == 50
    cold_s: list[float] = []
    warm_s: list[float] = []
    floor_s: list[float] = []
    for _ in range(repeat):
        fresh = make_object()  # a class never seen: nothing cached about its methods
        start = time.perf_counter()
        specs(fresh)
        cold_s.append(time.perf_counter() - start)
        warm_s += timeit(lambda: specs(warm_obj), repeat=1, warmup=0)
        floor_s += timeit(lambda: hand_schemas(warm_obj), repeat=1, warmup=0)
    cold, warm, floor = median(cold_s), median(warm_s), median(floor_s)
    return {
        "cold_ms": cold * 1e3,
        "warm_ms": warm * 1e3,
        "floor_ms": floor * 1e3,
        "cold_ratio": cold / floor,
        "warm_ratio": warm / floor,
    }


def main() -> None:
    quick = "--quick" in sys.argv
    mcp = asyncio.run(mcp_call_overhead(batches=10 if quick else 40, per_batch=20 if quick else 50))
    objects = from_object_cost(repeat=5 if quick else 20)
    met = mcp["ratio"] <= TARGET
    print_table(
        "MCP tool call over stdio (echo), median of interleaved batches",
        ["path", "µs per call", "ratio", f"≤ {TARGET}×", "CPU µs (this process)", "CPU ratio"],
        [
            ["bare mcp.Client.call_tool", mcp["bare_us"], 1.0, "", mcp["bare_cpu_us"], 1.0],
            [
                "threadline execute_tool_call",
                mcp["threadline_us"],
                mcp["ratio"],
                met,
                mcp["threadline_cpu_us"],
                mcp["cpu_ratio"],
            ],
            [
                "(the tool's handler alone)",
                mcp["handler_us"],
                mcp["handler_ratio"],
                "",
                mcp["handler_cpu_us"],
                mcp["handler_cpu_us"] / mcp["bare_cpu_us"],
            ],
            ["(a thread hop alone, no-op)", mcp["thread_hop_us"], "", "", "", ""],
        ],
    )
    print_table(
        "Toolset.from_object on a 50-method object (toolset + 50 specs)",
        ["what", "ms", "ratio"],
        [
            ["Toolset.from_object + specs, a new class", objects["cold_ms"], objects["cold_ratio"]],
            ["the same object again (signatures cached)", objects["warm_ms"], objects["warm_ratio"]],
            ["pydantic create_model + schema by hand", objects["floor_ms"], 1.0],
        ],
    )
    record(
        "tools",
        {
            "mcp_call": mcp,
            "from_object_50": objects,
            "targets": {"mcp_call_ratio_max": TARGET},
            "met": met,
        },
    )


if __name__ == "__main__":
    main()
