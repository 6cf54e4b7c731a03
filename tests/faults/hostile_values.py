"""Hostile values (issue 31): what a log may be handed, by a model, a dict, a program or an MCP server.

- `deep_arguments`: a model (fake OpenAI, Responses and Anthropic servers on 127.0.0.1, streamed or not) answers a
  tool call whose arguments JSON nests a random 50 to 100,000 levels, in a turn stored in SQLite. A case survives when
  the turn ends without a crash, the stored log validates and equals the log in memory, and the model was answered:
  arguments within the log's 128 levels reach the tool, deeper ones are an "invalid arguments" error result the model
  reads (or, only where the answer itself cannot be read, Anthropic's non-streamed body, a logged ``bad_response``).
  Before: 129 to about 900 levels failed the model call with `ValueError`, deeper ones with `RecursionError`.
- `non_json_values`: a value JSON cannot hold or keep (``object()``, bytes, a tuple, a set, a datetime, a Decimal, a
  key that is not text, a value nested past 128 levels; nan or an infinity for ``duration_ms``; a token count below
  0 or past 64 bits) at a random field, read by `MessageList.from_dict` in each format (2.1, 2.0, fluent 1.0, a list
  of OpenAI chat messages, the JSON-file layout) or written from Python (`Conversation.add`, ``store.append``, an
  import) to SQLite. A case survives when it is refused with an error naming where it is (the position and field
  for a reader), nothing is written and the stored log still loads as it was. Before: ``from_dict`` took an
  ``object()`` and ``to_json`` raised `TypeError`; nan durations were written as ``null``; bytes, tuples and sets
  were stored as something else.
- `silent_mcp_servers`: an MCP server that never answers (a stdio command that reads and says nothing, exiting at
  the end of its input or not, even ignoring SIGTERM; a URL whose server accepts and never answers), with a timeout
  of 1 to 2 s, listed, connected (sync or async) or closed while starting. A case survives when the start fails with
  `MCPConnectionError` (or the close stops it) well within the old minute and no server process is left. Before:
  60 to 72 s, whatever ``timeout`` said.
"""

from __future__ import annotations

import asyncio
import datetime
import decimal
import math
import random
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.mcp_toolsets.conftest import toolset_processes
from tests.providers.conftest import make_anthropic, make_openai, make_responses
from tests.providers.servers import Answer, FakeAnthropic, FakeOpenAI, FakeResponses, ToolUse
from threadline import (
    AssistantMessage,
    Conversation,
    MessageList,
    MessageListDeserializationError,
    ModelError,
    ThreadlineError,
    ToolCall,
    ToolMessage,
    Toolset,
    Usage,
    UserMessage,
    llm,
)
from threadline._text import MAX_NESTING
from threadline.messages import MessageMeta
from threadline.serialization.file_messages import messages_from_file_data
from threadline.store import ConversationInfo, ImportItem, Store, open_store
from threadline.tools.mcp.toolset import MCPConnectionError

from .campaign import Row

# -- deep arguments ---------------------------------------------------------------------------------------------------

PROVIDERS: dict[str, Any] = {
    "openai": (FakeOpenAI, make_openai),
    "responses": (FakeResponses, make_responses),
    "anthropic": (FakeAnthropic, make_anthropic),
}
ANSWER = "Which city, plainly?"


def probe(city: Any) -> str:
    """Take anything as the city."""
    return "probed"


def nested_arguments(depth: int) -> str:
    """Arguments whose JSON nests ``depth`` objects deep, as compact text."""
    return '{"city":' + '{"a":' * (depth - 1) + '"Paris"' + "}" * depth


def deep_arguments(cases: int, directory: Path, *, seed: int | None = None) -> Row:
    """``cases`` turns whose model sends tool-call arguments nested a random 50 to 100,000 levels deep."""
    rng = random.Random(seed)
    row = Row("tool-call arguments nested 50-100,000 deep (3 providers, streamed or not, SQLite)")
    with open_store(f"sqlite:///{directory / f'deep-{uuid.uuid4().hex[:8]}.db'}") as store:
        for number in range(cases):
            kind = rng.choice(sorted(PROVIDERS))
            stream = rng.random() < 0.5
            # A third within the limit (they must reach the tool); the rest log-uniform past it, so as many cases
            # land just past it as past what a decoder builds, and far past.
            if rng.random() < 1 / 3:
                depth = rng.randint(50, MAX_NESTING)
            else:
                depth = int(math.exp(rng.uniform(math.log(MAX_NESTING + 1), math.log(100_000))))
            row.saw(f"{'within' if depth <= MAX_NESTING else 'past'} the limit")
            note = f"case {number}: {kind}, {'streamed' if stream else 'JSON body'}, {depth} levels"
            asyncio.run(_deep_case(row, store, kind, stream, depth, note))
    return row


async def _deep_case(row: Row, store: Store, kind: str, stream: bool, depth: int, note: str) -> None:
    server_class, make = PROVIDERS[kind]
    with server_class() as server:
        model = make(server)
        try:
            arguments = nested_arguments(depth)
            server.add(Answer(tool_calls=(ToolUse("probe", arguments),)), Answer(ANSWER))
            builder = llm.model(model).tools(probe).store(store).request("Weather?")
            conversation = builder.prompt_conversation(stream=stream, max_retries=0)
            failure: ModelError | None = None
            try:
                async for _ in conversation:
                    pass
            except ModelError as exc:
                failure = exc
            except Exception as exc:  # anything else is a crash
                row.case(crashed=f"{type(exc).__name__}: {str(exc)[:200]}", note=note)
                return
        finally:
            await model.aclose()
    log = conversation.messages
    try:
        log.validate()
        stored = store.load(conversation.id)
        stored.validate()
    except ThreadlineError as exc:
        row.case(crashed=f"the log does not validate: {exc}", invalid=1, note=note)
        return
    lost = sum(1 for message in log if message not in list(stored))
    problem = _deep_outcome(log, failure, kind, stream, depth)
    row.case(crashed=problem, lost=lost, invalid=0 if stored == log else 1, note=note)


def _deep_outcome(log: MessageList, failure: ModelError | None, kind: str, stream: bool, depth: int) -> str | None:
    """What is wrong with how the turn ended (None: nothing)."""
    if failure is not None:
        # Only Anthropic's JSON body carries the arguments as an object, which past what a decoder builds cannot be
        # read at all; everything else is read and answered.
        readable = not (kind == "anthropic" and not stream and depth > MAX_NESTING)
        if readable or failure.type != "bad_response":
            return f"the turn failed: {failure.type}: {failure}"
        return None
    results = [message for message in log if isinstance(message, ToolMessage)]
    if len(results) != 1 or log[-1].content != ANSWER:  # type: ignore[union-attr]
        return f"the turn did not end as scripted: {[type(m).__name__ for m in log]}"
    (result,) = results
    if depth <= MAX_NESTING:  # the arguments object is the first of the ``depth`` levels
        return None if result.content == "probed" else f"the tool did not run: {result.content[:200]}"
    if not (result.is_error and f"nested more than {MAX_NESTING} levels deep" in result.content):
        return f"the result does not tell the model: {result.content[:200]}"
    return None


# -- non-JSON values --------------------------------------------------------------------------------------------------


def _deep_value(rng: random.Random) -> Any:
    value: Any = "leaf"
    for _ in range(rng.randint(MAX_NESTING + 1, 5_000)):
        value = [value] if rng.random() < 0.5 else {"k": value}
    return value


# Values a free-form field (tool-call arguments, meta.ui) must not hold: each makes a fresh one.
NOT_JSON: dict[str, Callable[[random.Random], Any]] = {
    "object": lambda rng: object(),
    "bytes": lambda rng: rng.randbytes(rng.randint(0, 8)),
    "tuple": lambda rng: tuple(range(rng.randint(0, 3))),
    "set": lambda rng: {rng.randint(0, 9)},
    "datetime": lambda rng: datetime.datetime(2024, 5, 1, tzinfo=datetime.UTC),
    "decimal": lambda rng: decimal.Decimal("1.5"),
    "complex": lambda rng: complex(1, 2),
    "int key": lambda rng: {rng.randint(0, 9): "v"},
    "struct": lambda rng: Usage(input_tokens=1),
    "deep": _deep_value,
}
# Numbers a typed field must not hold.
BAD_DURATIONS = [math.nan, math.inf, -math.inf]
BAD_COUNTS = [-1, -(2**70), 2**63, 2**70]


def _bury(value: Any, rng: random.Random) -> dict[str, Any]:
    """A JSON object with ``value`` at a random place a few levels down."""
    inner: Any = value
    for _ in range(rng.randint(0, 3)):
        inner = [1, inner] if rng.random() < 0.3 else {"x": 1, rng.choice(["k", "key", "é"]): inner}
    return inner if isinstance(inner, dict) else {"value": inner}


# -- readers: (format, field, where the value lands) -> (document, position the error must name)
def _v2(version: str, message: dict[str, Any]) -> tuple[Any, int]:
    return {"version": version, "messages": [{"role": "user", "content": "q"}, message]}, 1


def _reader_cases(rng: random.Random) -> list[tuple[str, Callable[[], tuple[Any, int]]]]:
    def hostile() -> Any:
        return NOT_JSON[rng.choice(sorted(NOT_JSON))](rng)

    def call(arguments: Any) -> dict[str, Any]:
        return {"role": "assistant", "tool_calls": [{"id": "c1", "name": "f", "arguments": arguments}]}

    def result(**extra: Any) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": "c1", "tool_name": "f", "content": "ok", **extra}

    def with_call(version: str, message: dict[str, Any]) -> tuple[Any, int]:
        return {"version": version, "messages": [call({}), message]}, 1

    version = rng.choice(["2.0", "2.1"])
    return [
        ("native arguments", lambda: _v2(version, call(_bury(hostile(), rng)))),
        (
            "native meta.ui",
            lambda: _v2(version, {"role": "user", "content": "a", "meta": {"ui": _bury(hostile(), rng)}}),
        ),
        ("native duration_ms", lambda: with_call(version, result(duration_ms=rng.choice(BAD_DURATIONS)))),
        (
            "native usage",
            lambda: _v2(
                version,
                {"role": "assistant", "content": "a", "usage": {rng.choice(_COUNTS): rng.choice(BAD_COUNTS)}},
            ),
        ),
        (
            "fluent arguments",
            lambda: (
                {
                    "version": "1.0",
                    "messages": [
                        {"type": "TextMessage", "role": "user", "text": "q"},
                        {
                            "type": "ToolCallMessage",
                            "tool_name": "f",
                            "tool_call_id": "c1",
                            "arguments": _bury(hostile(), rng),
                        },
                    ],
                },
                1,
            ),
        ),
        (
            "fluent result",
            lambda: (
                {
                    "version": "1.0",
                    "messages": [
                        {"type": "TextMessage", "role": "user", "text": "q"},
                        {
                            "type": "ToolCallMessage",
                            "tool_name": "f",
                            "tool_call_id": "c1",
                            "result": _bury(hostile(), rng),
                        },
                    ],
                },
                1,
            ),
        ),
        (
            "openai arguments",
            lambda: (
                [
                    {"role": "user", "content": "q"},
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": _bury(hostile(), rng)}}],
                    },
                ],
                1,
            ),
        ),
    ]


_COUNTS = ["input_tokens", "output_tokens", "reasoning_tokens"]


def _layout_cases(rng: random.Random) -> list[tuple[str, Callable[[], tuple[Any, int]]]]:
    def hostile() -> Any:
        return NOT_JSON[rng.choice(sorted(NOT_JSON))](rng)

    call = {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {}}}]}
    return [
        (
            "layout arguments",
            lambda: (
                [
                    {"role": "user", "content": "q"},
                    {
                        **call,
                        "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": _bury(hostile(), rng)}}],
                    },
                ],
                1,
            ),
        ),
        ("layout ui", lambda: ([{"role": "user", "content": "q", "ui": _bury(hostile(), rng)}], 0)),
        (
            "layout duration",
            lambda: (
                [
                    call,
                    {
                        "role": "tool",
                        "tool_call_id": "c1",
                        "content": "ok",
                        "duration": rng.choice([*BAD_DURATIONS, 10**400]),
                    },
                ],
                1,
            ),
        ),
    ]


# -- writes from Python: (field, a message made with the value)
def _write_cases(rng: random.Random) -> list[tuple[str, Callable[[], Any]]]:
    def hostile() -> Any:
        name = rng.choice(sorted(set(NOT_JSON) - {"deep"}))  # one made that deep is refused when made
        return NOT_JSON[name](rng)

    def deep_call() -> AssistantMessage:
        made = ToolCall(id="c9", name="f")
        made.arguments = {"x": _deep_value(rng)}  # set after it was made, as a program may
        return AssistantMessage(tool_calls=[made])

    return [
        (
            "tool_calls",
            lambda: AssistantMessage(tool_calls=[ToolCall(id="c9", name="f", arguments=_bury(hostile(), rng))]),
        ),
        ("tool_calls", deep_call),
        ("meta", lambda: UserMessage(content="a", meta=MessageMeta(ui=_bury(hostile(), rng)))),
        (
            "duration_ms",
            lambda: ToolMessage(tool_call_id="c1", tool_name="f", content="ok", duration_ms=rng.choice(BAD_DURATIONS)),
        ),
        ("usage", lambda: AssistantMessage(content="a", usage=Usage(**{rng.choice(_COUNTS): rng.choice(BAD_COUNTS)}))),
    ]


def non_json_values(cases: int, directory: Path, *, seed: int | None = None) -> Row:
    """``cases`` values JSON cannot hold or keep, at random fields, read from a dict or written from Python."""
    rng = random.Random(seed)
    row = Row("non-JSON values read from dicts or written (5 readers, 3 writes, SQLite)")
    with open_store(f"sqlite:///{directory / f'values-{uuid.uuid4().hex[:8]}.db'}") as store:
        for number in range(cases):
            if rng.random() < 0.6:
                name, make = rng.choice([*_reader_cases(rng), *_layout_cases(rng)])
                row.saw(f"read: {name}")
                _read_case(row, name, make, f"case {number}: {name}")
            else:
                field, make = rng.choice(_write_cases(rng))
                way = rng.choice(["conversation.add", "store.append", "import"])
                row.saw(f"write: {way}")
                _write_case(row, store, way, field, make(), f"case {number}: {field} via {way}")
    return row


def _read_case(row: Row, name: str, make: Callable[[], tuple[Any, int]], note: str) -> None:
    try:
        document, position = make()
    except ValueError as exc:  # a message made past the limit is refused when made: nothing to read
        row.case(crashed=f"the case could not be made: {exc}", note=note)
        return
    read = messages_from_file_data if name.startswith("layout") else MessageList.from_dict
    try:
        log = read(document)
    except MessageListDeserializationError as exc:
        if exc.position != position or f"messages[{position}]" not in str(exc):
            row.case(crashed=f"the error does not name messages[{position}]: {exc}", note=note)
        else:
            row.case(note=note)
        return
    except Exception as exc:  # anything else is not a clear error
        row.case(crashed=f"{type(exc).__name__}: {str(exc)[:200]}", note=note)
        return
    # Taken: it must at least be written and read back as it is.
    try:
        kept = MessageList.from_json(MessageList(log).to_json()) == MessageList(log)
    except Exception as exc:
        row.case(crashed=f"taken, then not written: {type(exc).__name__}: {str(exc)[:200]}", invalid=1, note=note)
        return
    row.case(crashed=None if kept else "taken, and read back as something else", invalid=0 if kept else 1, note=note)


def _good_log() -> list[Any]:
    return [
        UserMessage(content="Weather?"),
        AssistantMessage(tool_calls=[ToolCall(id="c1", name="f", arguments={"city": "Paris"})]),
        ToolMessage(tool_call_id="c1", tool_name="f", content="22 C"),
    ]


def _write_case(row: Row, store: Store, way: str, field: str, message: Any, note: str) -> None:
    log = _good_log()
    conversation = Conversation(messages=MessageList(log))
    conversation.set_store(store)
    imported = f"import-{conversation.id}"
    try:
        if way == "conversation.add":
            conversation.add(message)
        elif way == "store.append":
            store.append(conversation.id, [UserMessage(content="next"), message])
        else:
            stamp = datetime.datetime.now(datetime.UTC)
            info = ConversationInfo(id=imported, title=None, created_at=stamp, updated_at=stamp)
            store.import_conversations([ImportItem(info, [*_good_log(), message])])
    except ThreadlineError as exc:
        if field not in str(exc):
            row.case(crashed=f"the error does not name {field}: {exc}", note=note)
            return
    except Exception as exc:  # anything else is not a clear error
        row.case(crashed=f"{type(exc).__name__}: {str(exc)[:200]}", note=note)
        return
    else:
        row.case(crashed="the value was written", invalid=1, note=note)
        return
    try:
        loaded = store.load(conversation.id)
        loaded.validate()
    except ThreadlineError as exc:
        row.case(crashed=f"the conversation no longer loads: {exc}", invalid=1, note=note)
        return
    if store.has_conversation(imported):
        row.case(crashed="part of a refused import was written", note=note)
        return
    lost = max(0, len(log) - len(loaded))
    row.case(crashed=None if list(loaded) == log else "the stored log changed", lost=lost, note=note)


# -- silent MCP servers -----------------------------------------------------------------------------------------------

SILENT_SERVER = Path(__file__).parents[1] / "mcp_toolsets" / "silent_server.py"
MCP_DEADLINE = 20.0  # seconds past the timeout: the SDK's stop sequence and slack; the old wait was 60 to 72 s


@contextmanager
def _mute_listener() -> Iterator[str]:
    """A URL on 127.0.0.1 whose server accepts connections and never sends a byte."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    finally:
        stop.set()
        thread.join(5)
        for connection in held:
            connection.close()
        listener.close()


def silent_mcp_servers(cases: int, directory: Path, *, seed: int | None = None) -> Row:
    """``cases`` MCP servers that never answer, each with a timeout of 1 to 2 s."""
    rng = random.Random(seed)
    row = Row("MCP servers that never answer (stdio and HTTP, timeout 1-2 s)")
    for number in range(cases):
        target = rng.choice(["eof", "stubborn", "deaf", "url"])
        way = rng.choice(
            ["names", "connect", "aconnect", "close while starting"]
            if target != "url"
            else ["names", "connect", "aconnect"]
        )
        timeout = round(rng.uniform(1.0, 2.0), 2)
        row.saw(f"{target}: {way}")
        _silent_case(row, target, way, timeout, f"case {number}: {target}, {way}, timeout {timeout:g} s")
    return row


def _silent_case(row: Row, target: str, way: str, timeout: float, note: str) -> None:
    mark = uuid.uuid4().hex
    with _mute_listener() as url:
        if target == "url":
            toolset = Toolset.from_mcp(url=url, name="Silent", timeout=timeout)
        else:
            command = [sys.executable, str(SILENT_SERVER), target]
            toolset = Toolset.from_mcp(
                command=command, name="Silent", timeout=timeout, env={"THREADLINE_TEST_MCP": mark}
            )
        started = time.monotonic()
        outcome: BaseException | None = None
        try:
            if way == "close while starting":
                outcome = _close_while_starting(toolset, mark)
            elif way == "aconnect":
                asyncio.run(toolset.aconnect())
            elif way == "connect":
                toolset.connect()
            else:
                toolset.names()
        except Exception as exc:
            outcome = exc
        seconds = time.monotonic() - started
        toolset.close()
    left = toolset_processes(mark)
    for pid in left:  # never leave one behind, even when the case failed
        _kill(pid)
    if not isinstance(outcome, MCPConnectionError):
        row.case(crashed=f"not an MCPConnectionError: {type(outcome).__name__}: {outcome}", note=note)
    elif seconds > timeout + MCP_DEADLINE:
        row.case(crashed=f"took {seconds:.0f} s with timeout={timeout:g}", note=note)
    elif left:
        row.case(crashed=f"left its server running: {left}", note=note)
    else:
        row.case(note=note)


def _close_while_starting(toolset: Any, mark: str) -> BaseException | None:
    outcome: list[BaseException | None] = []

    def connect() -> None:
        try:
            toolset.connect()
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    waiting = threading.Thread(target=connect, daemon=True)
    waiting.start()
    deadline = time.monotonic() + 30
    while not toolset_processes(mark) and waiting.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    toolset.close()
    waiting.join(MCP_DEADLINE)
    return outcome[0] if outcome else TimeoutError("the thread waiting for the start is still waiting")


def _kill(pid: int) -> None:
    import os
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
