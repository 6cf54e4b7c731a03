"""Hostile tools of issue 31: generators that never end, exceptions whose message cannot be read, and tools that write
to the conversation whose turn runs them.

Each case is one turn with `ScriptedModel`, run on a thread of its own (a turn that hangs is a failure of the case,
not of the campaign) on a store (SQLite or PostgreSQL, or none). A case survives when the turn ends with the model's
answer (or, for a model that fails, with a `ModelError` whose failure is logged), the tool result says clearly what
happened, the log in memory validates, and the stored log validates and holds every message in memory (``lost``
counts those it does not, ``invalid`` a stored log that does not validate or differs).

- `endless_generators`: a sync generator, an iterator inside a dict, ``map`` over a generator, a generator returned
  by an async tool, and an async generator that never awaits, with random item sizes and timeouts. The turn must
  end near the timeout with the timeout result, and the reading must stop there: the generator closed and no more
  than one item pulled after the answer (before the fix a sync one was read into a list after the turn had
  answered, 2.5 GB in 15 s; an async one held the turn past its timeout).
- `unreadable_exceptions`: a `BaseException` (``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``,
  ``CancelledError``, one of its own) or an ``Exception`` raised while the message of an error is read (its
  ``__str__``, an argument's ``repr``) or while a result is encoded (its ``repr``), by a sync or async tool, a
  generator's body, a custom model, or the tool of an agent_tool's sub-agent. Before the fix reading it ended the
  turn unanswered.
- `writes_from_running_tools`: ``record`` (user, system, assistant message, the running call's own result), ``add``,
  ``hold``, a turn started, from a sync tool, an async tool, a task or ``asyncio.to_thread`` started by one, on no
  store, SQLite and PostgreSQL. The write must be refused with `ConversationBusy` saying why; before the fix the
  running call was answered ``interrupted`` and then again, and the stored log never validated again.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tests.store._backends import backend_url
from threadline import (
    AssistantMessage,
    Conversation,
    ConversationBusy,
    ModelError,
    ProtocolError,
    SystemMessage,
    ToolCall,
    ToolMessage,
    agent_tool,
    llm,
    tool,
    user,
)
from threadline.store import Store, open_store
from threadline.testing import ScriptedModel

from .campaign import Row

# How long past its timeout a turn may take before the case counts as hung (generous: a loaded machine).
HANG_MARGIN = 10.0
UNREADABLE = "(its message could not be read)"


# -- shared ----------------------------------------------------------------------------------------------------------
def _run_turn(conversation: Conversation, limit: float) -> tuple[str | None, BaseException | None, bool]:
    """Run the conversation's armed turn on a thread of its own: (answer, what it raised, whether it still runs)."""
    box: dict[str, Any] = {}

    def drive() -> None:
        try:
            box["text"] = conversation.continuation.prompt()
        except BaseException as exc:  # the case judges it; the campaign goes on
            box["error"] = exc

    runner = threading.Thread(target=drive, name="hostile-turn", daemon=True)
    runner.start()
    runner.join(limit)
    return box.get("text"), box.get("error"), runner.is_alive()


def _log_problems(conversation: Conversation, store: Store | None) -> tuple[str | None, int, int]:
    """(problem, lost, invalid) of a conversation's logs after its turn."""
    try:
        conversation.messages.validate()
    except ProtocolError as exc:
        return f"the log in memory is invalid: {exc}", 0, 1
    if store is None:
        return None, 0, 0
    stored = store.load(conversation.id)
    stored_ids = {message.id for message in stored}
    lost = sum(message.id not in stored_ids for message in conversation.messages)
    try:
        stored.validate()
    except ProtocolError as exc:
        return f"the stored log is invalid: {exc}", lost, 1
    if list(stored) != list(conversation.messages):
        return "the stored log differs from the log in memory", lost, 1
    return None, lost, 0


def _open(backend: str, stack: contextlib.ExitStack, directory: Path) -> Store | None:
    if backend == "none":
        return None
    store = open_store(stack.enter_context(backend_url(backend, directory)))
    stack.callback(store.close)
    return store


def _calls(name: str, arguments: dict[str, Any] | None = None) -> AssistantMessage:
    return AssistantMessage(tool_calls=[ToolCall(id="c1", name=name, arguments=arguments or {})])


# -- generators that never end ---------------------------------------------------------------------------------------
class _Source:
    """An endless stream of new items of ``size`` characters, paced (a millisecond's pause every 100 items or 20 KB,
    at most about 20 MB/s) so that a reader that never stops cannot fill the machine's memory while a case waits."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pulled = 0
        self.unpaced = 0
        self.closed = threading.Event()
        self.release = threading.Event()  # set when the case is over: a reader that never stops ends then

    def _next(self) -> str:
        self.pulled += 1
        self.unpaced += self.size
        if self.pulled % 100 == 0 or self.unpaced >= 20_000:
            self.unpaced = 0
            time.sleep(0.001)
        return "x" * self.size

    def lines(self) -> Iterator[str]:
        try:
            while not self.release.is_set():
                yield self._next()
        finally:
            self.closed.set()

    async def lines_async(self) -> AsyncIterator[str]:
        try:
            while not self.release.is_set():  # never suspends
                yield self._next()
        finally:
            self.closed.set()


def _endless_tool(kind: str, source: _Source) -> Callable[..., Any]:
    async def returns_generator() -> Any:
        await asyncio.sleep(0)
        return {"lines": source.lines()}

    return {
        "sync generator": lambda: source.lines(),
        "iterator inside a dict": lambda: {"lines": source.lines()},
        "map over a generator": lambda: map(str.upper, source.lines()),
        "async generator that never awaits": source.lines_async,
        "generator returned by an async tool": returns_generator,
    }[kind]


ENDLESS_KINDS = [
    "sync generator",
    "iterator inside a dict",
    "map over a generator",
    "async generator that never awaits",
    "generator returned by an async tool",
]


def endless_generators(cases: int, directory: Path, *, seed: int | None = None) -> Row:
    """``cases`` turns whose one tool never ends (kinds in turn, random item sizes of 1 B-64 KB and timeouts of
    0.05-0.4 s), on SQLite and PostgreSQL in turn."""
    rng = random.Random(seed)
    row = Row("endless generators (tool timeout)")
    for number in range(cases):
        kind = ENDLESS_KINDS[number % len(ENDLESS_KINDS)]
        backend = ("sqlite", "postgres")[(number // len(ENDLESS_KINDS)) % 2]
        size = rng.choice([1, 100, 1000, 10_000, 65_536])
        timeout = round(rng.uniform(0.05, 0.4), 2)
        note = f"case {number}: {kind}, items of {size} B, timeout {timeout:g} s, {backend}"
        row.saw(kind)
        source = _Source(size)
        try:
            with contextlib.ExitStack() as stack:
                store = _open(backend, stack, directory)
                problem, lost, invalid = _endless_case(kind, source, timeout, store)
        except Exception as exc:
            problem, lost, invalid = f"{type(exc).__name__}: {exc}"[:200], 0, 0
        finally:
            source.release.set()
        row.case(crashed=problem, lost=lost, invalid=invalid, note=note)
    return row


def _endless_case(kind: str, source: _Source, timeout: float, store: Store | None) -> tuple[str | None, int, int]:
    model = ScriptedModel([_calls("endless"), "done"])
    builder = llm.model(model).tools(tool(_endless_tool(kind, source), name="endless", timeout=timeout))
    if store is not None:
        builder = builder.store(store)
    conversation = builder.request("go").prompt_conversation()
    text, error, hung = _run_turn(conversation, timeout + HANG_MARGIN)
    at_answer = source.pulled
    if hung:
        return f"the turn was held past its timeout ({source.pulled:,} items read)", 0, 0
    if error is not None:
        return f"the turn raised {type(error).__name__}: {error}"[:200], 0, 0
    if not source.closed.wait(5):
        return f"still read after the turn had answered ({source.pulled - at_answer:,} items since)", 0, 0
    after = source.pulled - at_answer
    if after > 1:
        return f"{after:,} items read after the turn had answered", 0, 0
    result = conversation.messages[2]
    stopped = kind == "async generator that never awaits"
    expected = (
        f"Tool 'endless' timed out after {timeout:g} s and was stopped."
        if stopped
        else f"Tool 'endless' did not finish in {timeout:g} s; it may still be running."
    )
    if not isinstance(result, ToolMessage) or result.content != expected:
        return f"the result is {getattr(result, 'content', result)!r:.120}", 0, 0
    if text != "done":
        return f"the turn ended with {text!r}", 0, 0
    return _log_problems(conversation, store)


# -- exceptions whose message cannot be read ---------------------------------------------------------------------------
def _raised(name: str) -> BaseException:
    class Custom(BaseException):
        """A BaseException that is neither KeyboardInterrupt nor a cancellation."""

    return {
        "SystemExit": SystemExit("from __str__"),
        "KeyboardInterrupt": KeyboardInterrupt(),
        "GeneratorExit": GeneratorExit(),
        "CancelledError": asyncio.CancelledError(),
        "custom BaseException": Custom("custom"),
        "RuntimeError": RuntimeError("no message either"),
    }[name]


RAISED = ["SystemExit", "KeyboardInterrupt", "GeneratorExit", "CancelledError", "custom BaseException", "RuntimeError"]
HOW = ["__str__ raises", "an argument's repr raises", "the result's repr raises"]
WHERE = ["sync tool", "async tool", "generator body", "async generator body", "custom model", "sub-agent's tool"]


def _unreadable(raised: BaseException, how: str) -> Any:
    """The exception to raise (or the value to return, for a result) whose reading raises ``raised``."""

    class Unreadable(Exception):
        def __str__(self) -> str:
            raise raised

    class BadRepr:
        def __repr__(self) -> str:
            raise raised

    if how == "__str__ raises":
        return Unreadable()
    if how == "an argument's repr raises":
        return ValueError(BadRepr(), 2)
    return {"value": BadRepr()}


def _unreadable_tool(where: str, made: Any, returns: bool) -> Callable[..., Any]:
    def sync_tool() -> Any:
        if returns:
            return made
        raise made

    async def async_tool() -> Any:
        await asyncio.sleep(0)
        return sync_tool()

    def generator() -> Iterator[Any]:
        yield sync_tool()

    async def async_generator() -> AsyncIterator[Any]:
        yield sync_tool()

    return {
        "sync tool": sync_tool,
        "async tool": async_tool,
        "generator body": generator,
        "async generator body": async_generator,
        "sub-agent's tool": sync_tool,
    }[where]


def unreadable_exceptions(cases: int, directory: Path, *, seed: int | None = None) -> Row:
    """``cases`` turns meeting an error (or a result) that cannot be read: every (raised, how, where) in random
    order, on a SQLite store."""
    rng = random.Random(seed)
    row = Row("exceptions whose message cannot be read")
    combos = [(r, h, w) for r in RAISED for h in HOW for w in WHERE if not (w == "custom model" and h == HOW[2])]
    rng.shuffle(combos)
    with open_store(f"sqlite:///{directory / 'unreadable.db'}") as store:
        for number in range(cases):
            raised, how, where = combos[number % len(combos)]
            note = f"case {number}: {raised} when {how}, in: {where}"
            row.saw(where)
            try:
                problem, lost, invalid = _unreadable_case(_raised(raised), how, where, store)
            except Exception as exc:
                problem, lost, invalid = f"{type(exc).__name__}: {exc}"[:200], 0, 0
            row.case(crashed=problem, lost=lost, invalid=invalid, note=note)
    return row


def _unreadable_case(raised: BaseException, how: str, where: str, store: Store) -> tuple[str | None, int, int]:
    made = _unreadable(raised, how)
    returns = how == HOW[2]
    if where == "custom model":
        conversation = llm.model(ScriptedModel([made, "ok"])).store(store).request("go").prompt_conversation()
        text, error, hung = _run_turn(conversation, HANG_MARGIN)
        if hung:
            return "the turn hung", 0, 0
        if not isinstance(error, ModelError) or UNREADABLE not in str(error):
            return f"the turn ended with {text!r} / {type(error).__name__}: {error!s:.120}", 0, 0
        failure = conversation.messages[-1]
        if not isinstance(failure, AssistantMessage) or failure.error is None:
            return "the failure is not in the log", 0, 0
        return _log_problems(conversation, store)
    handler = tool(_unreadable_tool(where, made, returns), name="fragile")
    if where == "sub-agent's tool":
        child = llm.model(ScriptedModel([_calls("fragile"), "the tool failed"])).tools(handler).store(store)
        handler = agent_tool(child, "helper", "Helps.")
        model = ScriptedModel([_calls("helper", {"task": "x"}), "done"])
    else:
        model = ScriptedModel([_calls("fragile"), "done"])
    conversation = llm.model(model).tools(handler).store(store).request("go").prompt_conversation()
    text, error, hung = _run_turn(conversation, HANG_MARGIN)
    if hung:
        return "the turn hung", 0, 0
    if error is not None or text != "done":
        return f"the turn ended with {text!r} / {type(error).__name__}: {error!s:.120}", 0, 0
    if where == "sub-agent's tool":
        sub = _child_result(store, conversation)
        if sub is None:
            return "the sub-agent's log has no result of its tool", 0, 0
        result = sub
    else:
        result = conversation.messages[2]
    wanted = "cannot be encoded" if returns else UNREADABLE
    if not isinstance(result, ToolMessage) or not result.is_error or wanted not in result.content:
        return f"the result is {getattr(result, 'content', result)!r:.120}", 0, 0
    return _log_problems(conversation, store)


def _child_result(store: Store, parent: Conversation) -> ToolMessage | None:
    """The result of the sub-agent's own tool call, from the sub-agent's stored log."""
    import json

    answer = parent.messages[2]
    if not isinstance(answer, ToolMessage) or answer.is_error:
        return None
    child = store.load(json.loads(answer.content)["conversation_id"])
    child.validate()
    return next((m for m in child if isinstance(m, ToolMessage)), None)


# -- tools writing to the conversation that runs them ----------------------------------------------------------------
WRITERS = [
    "record a user message",
    "record a system message",
    "record an assistant message",
    "record its own result",
    "add",
    "hold and record",
    "start a turn",
    "prompt_conversation",
]
FROM = ["sync tool", "async tool", "task of an async tool", "asyncio.to_thread in an async tool"]


def _write(writer: str, conversation: Conversation) -> None:
    """One write to ``conversation``, as a tool's code would make it (synchronously)."""
    if writer == "record a user message":
        conversation.record(user("from the tool"))
    elif writer == "record a system message":
        conversation.record(SystemMessage(content="a note"))
    elif writer == "record an assistant message":
        conversation.record(AssistantMessage(content="said by the tool"))
    elif writer == "record its own result":
        conversation.record(ToolMessage(tool_call_id="c1", tool_name="note", content="answered by the tool"))
    elif writer == "add":
        conversation.add(user("from the tool"))
    elif writer == "hold and record":
        with conversation.hold():
            conversation.record(user("held"))
    elif writer == "start a turn":
        conversation.continuation.request("nested").prompt()
    else:
        conversation.continuation.request("nested").prompt_conversation()


async def _write_async(writer: str, conversation: Conversation) -> None:
    if writer == "hold and record":
        async with conversation.hold():
            conversation.record(user("held"))
    elif writer == "start a turn":
        await conversation.continuation.request("nested").prompt_async()
    else:
        _write(writer, conversation)


def writes_from_running_tools(
    cases: int, directory: Path, *, seed: int | None = None, backends: Sequence[str] = ("none", "sqlite", "postgres")
) -> Row:
    """``cases`` turns whose tool writes to its own conversation: random writer and place, backends in turn."""
    rng = random.Random(seed)
    row = Row("writes from a running tool to its own conversation")
    for number in range(cases):
        writer, place = rng.choice(WRITERS), rng.choice(FROM)
        backend = backends[number % len(backends)]
        note = f"case {number}: {writer}, from: {place}, store: {backend}"
        row.saw(writer)
        try:
            with contextlib.ExitStack() as stack:
                store = _open(backend, stack, directory)
                problem, lost, invalid = _write_case(writer, place, store)
        except Exception as exc:
            problem, lost, invalid = f"{type(exc).__name__}: {exc}"[:200], 0, 0
        row.case(crashed=problem, lost=lost, invalid=invalid, note=note)
    return row


def _write_case(writer: str, place: str, store: Store | None) -> tuple[str | None, int, int]:
    found: dict[str, Any] = {}

    def sync_note() -> str:
        try:
            _write(writer, found["conversation"])
        except ConversationBusy as exc:
            found["refused"] = exc
            raise
        return "written"

    async def async_note() -> str:
        try:
            if place == "async tool":
                await _write_async(writer, found["conversation"])
            elif place == "task of an async tool":
                await asyncio.ensure_future(_write_async(writer, found["conversation"]))
            else:
                await asyncio.to_thread(_write, writer, found["conversation"])
        except ConversationBusy as exc:
            found["refused"] = exc
            raise
        return "written"

    model = ScriptedModel([_calls("note"), "done", "nested"])
    builder = llm.model(model).tools(tool(sync_note if place == "sync tool" else async_note, name="note"))
    if store is not None:
        builder = builder.store(store)
    conversation = builder.request("go").prompt_conversation(tool_timeout=5)
    conversation.config.busy_timeout = 1  # before the fix, a turn started from the tool waited for its own turn
    found["conversation"] = conversation
    text, error, hung = _run_turn(conversation, 5 + HANG_MARGIN)
    if hung:
        return "the turn hung", 0, 0
    problem, lost, invalid = _log_problems(conversation, store)
    if problem is not None:
        return problem, lost, invalid
    if error is not None or text != "done":
        return f"the turn ended with {text!r} / {type(error).__name__}: {error!s:.120}", 0, 0
    refused = found.get("refused")
    if refused is None or "is running the turn that called this tool" not in str(refused):
        return f"the write was not refused with a clear error ({refused!s:.120})", 0, 0
    results = [m for m in conversation.messages if isinstance(m, ToolMessage)]
    if len(results) != 1 or "ConversationBusy" not in results[0].content:
        return f"the call's result is {[m.content[:80] for m in results]}", 0, 0
    conversation.add(user("after the turn"))  # the conversation goes on
    return _log_problems(conversation, store)
