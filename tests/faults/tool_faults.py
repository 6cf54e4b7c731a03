"""Tool faults: tools that raise (``Exception``, ``SystemExit``, other ``BaseException``s), hang (sync; async that
honour or swallow their cancellation), return values that are hard to log (``nan``, lone surrogates, megabytes,
objects JSON cannot encode), and calls the model gets wrong (unknown names, invalid arguments).

Each case is a turn with `ScriptedModel` on a real SQLite store: the model asks for one or several faulty calls
(several at once run concurrently), possibly over two rounds, then answers. The turn must finish with that answer,
every call must be answered once (an error result where the call could not give a result), the stored log must
validate and equal the log in memory, and every message made in memory must be in the store (``lost`` counts
those that are not).
"""

from __future__ import annotations

import asyncio
import itertools
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from threadline import (
    AssistantMessage,
    Conversation,
    ProtocolError,
    ToolCall,
    ToolMessage,
    UserMessage,
    llm,
    tool,
)
from threadline.store import Store, open_store
from threadline.testing import ScriptedModel

from .campaign import Row

TOOL_TIMEOUT = 0.2


class Abort(BaseException):
    """A BaseException that is neither KeyboardInterrupt nor a cancellation."""


class BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ fails too")


def raises() -> str:
    """Raise an ordinary exception."""
    raise ValueError("the tool broke")


async def raises_async() -> str:
    """Raise from an async tool."""
    await asyncio.sleep(0)
    raise RuntimeError("the async tool broke")


def exits() -> str:
    """Call sys.exit, as a careless script does."""
    sys.exit(3)


def aborts() -> str:
    """Raise a custom BaseException."""
    raise Abort("custom")


async def generator_exit() -> str:
    """Raise GeneratorExit."""
    raise GeneratorExit


async def cancelled_inside() -> str:
    """Raise CancelledError itself (something it awaited was cancelled)."""
    raise asyncio.CancelledError


def bad_str() -> str:
    """Raise an exception whose __str__ raises."""
    raise BadStr


def hangs() -> str:
    """A sync tool past its timeout (its thread cannot be stopped; it ends by itself later)."""
    time.sleep(5 * TOOL_TIMEOUT)
    return "late"


async def hangs_async() -> str:
    """An async tool past its timeout that honours its cancellation."""
    await asyncio.Event().wait()
    return "never"


async def stubborn() -> str:
    """An async tool that swallows its cancellation and goes on past the grace period."""
    end = time.monotonic() + 2.5
    while time.monotonic() < end:
        try:
            await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            pass
    return "late"


def nan() -> float:
    """Return nan."""
    return float("nan")


def infinities() -> Any:
    """Return infinities and nan inside a structure."""
    return {"high": float("inf"), "low": float("-inf"), "list": [float("nan")]}


def surrogate() -> str:
    """Return a lone surrogate, as os.listdir gives for a file name that is not UTF-8."""
    return "report-\udcff.txt"


def surrogate_key() -> Any:
    """Return a structure with a lone surrogate in a key and a value."""
    return {"name\ud800": ["\udfff", "ok"]}


def huge() -> str:
    """Return about a megabyte of text."""
    return "x" * 1_000_000


def unencodable() -> Any:
    """Return objects JSON cannot encode."""
    return {"object": object(), "set": {1, 2}, "bytes": b"\xff"}


def nothing() -> None:
    """Return None."""


def typed(city: str, days: int) -> str:
    """A tool with a schema, for invalid arguments."""
    return f"{city} for {days} days"


@dataclass(frozen=True)
class Fault:
    """One faulty call: its tool name, arguments (or raw argument text), and whether it must be an error result
    (None: either is right, as long as it is answered)."""

    name: str
    arguments: dict[str, Any]
    error: bool | None
    raw: str | None = None
    slow: bool = False


FAULTS = {
    "raises": Fault("raises", {}, True),
    "raises_async": Fault("raises_async", {}, True),
    "SystemExit": Fault("exits", {}, True),
    "BaseException": Fault("aborts", {}, True),
    "GeneratorExit": Fault("generator_exit", {}, True),
    "CancelledError raised": Fault("cancelled_inside", {}, True),
    "__str__ raises": Fault("bad_str", {}, True),
    "hangs (sync)": Fault("hangs", {}, True),
    "hangs (async)": Fault("hangs_async", {}, True),
    "swallows cancellation": Fault("stubborn", {}, True, slow=True),
    "nan": Fault("nan", {}, False),
    "infinities": Fault("infinities", {}, False),
    "lone surrogate": Fault("surrogate", {}, False),
    "surrogate key": Fault("surrogate_key", {}, False),
    "1 MB result": Fault("huge", {}, False),
    "not JSON-able": Fault("unencodable", {}, None),
    "None": Fault("nothing", {}, False),
    "unknown tool": Fault("no_such_tool", {"a": 1}, True),
    "unknown odd name": Fault("../x\ud800 y", {}, True),
    "invalid JSON": Fault("typed", {}, True, raw='{"city": "Paris", "days": '),
    "missing field": Fault("typed", {"city": "Paris"}, True),
    "wrong type": Fault("typed", {"city": "Paris", "days": "many"}, True),
    "extra field": Fault("typed", {"city": "Paris", "days": 2, "evil": True}, True),
    "null for a string": Fault("typed", {"city": None, "days": 2}, True),
}
TOOLS = [
    raises, raises_async, exits, aborts, generator_exit, cancelled_inside, bad_str, hangs, hangs_async,
    tool(stubborn, timeout=TOOL_TIMEOUT), nan, infinities, surrogate, surrogate_key, huge, unencodable, nothing, typed,
]  # fmt: skip
_ids = itertools.count()


def calls(faults: list[Fault]) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=[
            ToolCall(id=f"call_{next(_ids)}", name=f.name, arguments=f.arguments, raw_arguments=f.raw) for f in faults
        ]
    )


def check_turn(conversation: Conversation, store: Store, rounds: list[list[Fault]]) -> tuple[str | None, int, int]:
    """(problem, lost, invalid) of a finished turn."""
    stored = store.load(conversation.id)
    memory = conversation.messages
    stored_ids = {message.id for message in stored}
    lost = sum(message.id not in stored_ids for message in memory)
    invalid = 0
    try:
        stored.validate()
        if stored.pending_tool_calls() or list(stored) != list(memory):
            invalid = 1
    except ProtocolError:
        invalid = 1
    faults = [fault for round_ in rounds for fault in round_]
    start = max(i for i, message in enumerate(memory) if isinstance(message, UserMessage))
    results = [m for m in memory[start:] if isinstance(m, ToolMessage)]
    if len(results) != len(faults):
        return f"{len(results)} results for {len(faults)} calls", lost, invalid
    for fault, result in zip(faults, results, strict=True):
        if fault.error is not None and result.is_error != fault.error:
            return f"{fault.name}: is_error={result.is_error}: {result.content[:80]!r}", lost, invalid
    return None, lost, invalid


def tool_faults(turns: int, directory: Path, seed: int = 0, slow_cases: int = 1) -> Row:
    """Every fault alone once, then ``turns`` turns of random combinations (1-4 calls, one or two rounds); the
    fault that costs seconds (an async tool swallowing its cancellation) runs ``slow_cases`` times."""
    row = Row("tool faults")
    rng = random.Random(seed)
    quick = [name for name, fault in FAULTS.items() if not fault.slow]
    plans: list[list[list[str]]] = [[[name]] for name in FAULTS]
    plans += [[["swallows cancellation", *rng.sample(quick, 2)]] for _ in range(max(0, slow_cases - 1))]
    for _ in range(turns):
        plans.append([rng.sample(quick, rng.randint(1, 4)) for _ in range(rng.randint(1, 2))])
    with open_store(f"sqlite:///{directory / 'tool-faults.db'}") as store:
        conversation: Conversation | None = None
        for number, plan in enumerate(plans):
            rounds = [[FAULTS[name] for name in round_] for round_ in plan]
            model = ScriptedModel([*(calls(round_) for round_ in rounds), "done"])
            note = " then ".join("+".join(round_) for round_ in plan)
            if conversation is None or number % 5 == 0:  # a few turns per conversation, then a fresh one
                builder = llm.store(store).tools(*TOOLS)
                conversation = None
            else:
                builder = conversation.continuation
            try:
                armed = builder.model(model).request(f"turn {number}").prompt_conversation(tool_timeout=TOOL_TIMEOUT)
                conversation = armed
                text = _drive(armed)
                problem, lost, invalid = check_turn(armed, store, rounds)
                if problem is None and text != "done":
                    problem = f"the turn ended with {text!r}"
            except Exception as exc:
                problem, lost, invalid = f"{type(exc).__name__}: {exc}"[:200], 0, 0
                conversation = None
            row.case(crashed=problem, lost=lost, invalid=invalid, note=note)
            for name in plan[0]:
                row.saw(name)
    return row


def _drive(conversation: Conversation) -> str | None:
    async def run() -> None:
        async for _ in conversation:
            pass

    asyncio.run(run())
    return conversation.text
