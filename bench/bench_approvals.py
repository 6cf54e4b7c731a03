"""Approval benchmarks: what tool calls that wait cost, each against a floor measured in the same run.

1. **A tool round when approvals are declared but nothing waits** (target <= 1.10x): a `ScriptedModel` turn of one
   round of four tool calls and an answer, on a `Conversation` without a store. Floor: the same tools with no
   approval rule (the round pays nothing: no gate is made). Measured: the same tools with ``approval=`` a rule that
   answers False (each call's gate is checked, the log is not scanned).
2. **Approve and resume** (target <= 1.5x): on a SQLite store, a turn whose one call waits, then `approve` (the
   conversation held, caught up with the store, the decision written) and `resume` (the approved call runs, the
   model answers). Floor: the same number of turns without a wait: a turn whose call runs at once, then a second
   request on the same conversation. The difference is what a wait adds: its two entries and the decision's hold
   of the conversation.
3. **Finding the waits of a long log** (target <= 1.5x): `call_waits` on a 20,000-message log against a 200-message
   one, both ending with a waiting tool group: it walks back from the end only, so its cost does not grow with
   the log.
4. **validate() of a log with waits** (target <= 2.0x): a worst case, where every tool group waited and was decided
   (a third of the messages are approval entries, each checked against its call's SHA-256), against the same number
   of messages in plain tool groups.

Run: python bench/bench_approvals.py [--quick]
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median, print_table, record, timeit
from threadline import (
    AssistantMessage,
    Conversation,
    ConversationConfig,
    MessageList,
    ToolCall,
    ToolMessage,
    UserMessage,
    tool,
)
from threadline.message_list import call_waits
from threadline.messages import ApprovalMessage, arguments_sha256
from threadline.store import open_store
from threadline.testing import ScriptedModel

QUICK = "--quick" in sys.argv


def make_tools(approval: Any) -> list[Any]:
    def lookup(name: str) -> str:
        """Look a name up."""
        return f"{name}: found"

    return [tool(name=f"lookup{i}", approval=approval)(lookup) for i in range(4)]


def round_script() -> list[Any]:
    calls = [ToolCall(id=f"c{i}", name=f"lookup{i}", arguments={"name": f"n{i}"}) for i in range(4)]
    return [AssistantMessage(tool_calls=calls), "done"]


def interleaved(first: Callable[[], Any], second: Callable[[], Any], calls: int) -> tuple[float, float]:
    """Median seconds per call of each, calling them in turns (one, then the other), so both see the same machine
    state: the same size of store, the same garbage to collect, the same worker threads."""
    for _ in range(5):
        first()
        second()
    a: list[float] = []
    b: list[float] = []
    clock = time.perf_counter
    for _ in range(calls):
        start = clock()
        first()
        middle = clock()
        second()
        a.append(middle - start)
        b.append(clock() - middle)
    return median(a), median(b)


def tool_round(approval: Any) -> Callable[[], None]:
    tools = make_tools(approval)

    def once() -> None:
        conversation = Conversation(config=ConversationConfig(model=ScriptedModel(round_script()), tools=tools))
        conversation.continuation.request("look them up").prompt()
        assert conversation.last_turn is not None and conversation.last_turn.stop_reason == "end"

    return once


def round_trip(directory: Path) -> tuple[float, float]:
    store = open_store(str(directory / "bench.db"))

    def plain_tool(amount: float) -> str:
        """Pay."""
        return "paid"

    plain = tool(name="pay")(plain_tool)
    gated = tool(name="pay", approval=True)(plain_tool)
    script = [AssistantMessage(tool_calls=[ToolCall(id="p1", name="pay", arguments={"amount": 5})]), "ok"]

    def floor() -> None:
        config = ConversationConfig(model=ScriptedModel([*script, "and again"]), tools=[plain])
        conversation = Conversation(config=config, store=store)
        conversation.continuation.request("pay").prompt()
        conversation.continuation.request("thanks").prompt()

    def waited() -> None:
        config = ConversationConfig(model=ScriptedModel(list(script)), tools=[gated])
        conversation = Conversation(config=config, store=store)
        conversation.continuation.request("pay").prompt()
        conversation.approve("p1", by="bench")
        assert conversation.resume().stop_reason == "end"

    results = interleaved(floor, waited, 100 if QUICK else 400)
    store.close()
    return results


def waiting_log(size: int) -> MessageList:
    messages: list[Any] = []
    while len(messages) < size - 4:
        call = ToolCall(id=f"c{len(messages)}", name="pay", arguments={"amount": len(messages)})
        messages += [
            UserMessage(content="pay"),
            AssistantMessage(tool_calls=[call]),
            ToolMessage(tool_call_id=call.id, tool_name="pay", content="paid"),
            AssistantMessage(content="done"),
        ]
    call = ToolCall(id="last", name="pay", arguments={"amount": 1})
    entry = ApprovalMessage(
        tool_call_id="last", tool_name="pay", state="requested", arguments_sha256=arguments_sha256(call)
    )
    messages += [UserMessage(content="pay"), AssistantMessage(tool_calls=[call]), entry]
    return MessageList(messages)


def decided_log(groups: int, with_waits: bool) -> MessageList:
    """``groups`` tool groups of six messages each: with waits, a request and an approval before each result;
    without, the same count of messages in plain groups (a follow-up question and answer in their place)."""
    messages: list[Any] = []
    for n in range(groups):
        call = ToolCall(id=f"c{n}", name="pay", arguments={"amount": n})
        messages += [UserMessage(content="pay"), AssistantMessage(tool_calls=[call])]
        if with_waits:
            digest = arguments_sha256(call)
            messages += [
                ApprovalMessage(tool_call_id=call.id, tool_name="pay", state="requested", arguments_sha256=digest),
                ApprovalMessage(
                    tool_call_id=call.id, tool_name="pay", state="approved", by="b", arguments_sha256=digest
                ),
            ]
        messages += [ToolMessage(tool_call_id=call.id, tool_name="pay", content="paid"), AssistantMessage(content="ok")]
        if not with_waits:
            messages += [UserMessage(content="again"), AssistantMessage(content="ok")]
    return MessageList(messages)


def main() -> None:
    rows: list[list[Any]] = []
    results: dict[str, Any] = {}

    floor, gated = interleaved(tool_round(None), tool_round(lambda arguments: False), 100 if QUICK else 400)
    ratio = gated / floor
    rows.append(["tool round, approvals declared, none waits", floor * 1e3, gated * 1e3, ratio, 1.10, ratio <= 1.10])
    results["gated_round"] = {"floor_ms": floor * 1e3, "ours_ms": gated * 1e3, "ratio": ratio, "target": 1.10}

    with tempfile.TemporaryDirectory() as directory:
        floor, waited = round_trip(Path(directory))
    ratio = waited / floor
    rows.append(["wait + approve + resume vs two turns (SQLite)", floor * 1e3, waited * 1e3, ratio, 1.5, ratio <= 1.5])
    results["approve_resume"] = {"floor_ms": floor * 1e3, "ours_ms": waited * 1e3, "ratio": ratio, "target": 1.5}

    short, long = waiting_log(200), waiting_log(20_000)
    assert call_waits(long).waiting and call_waits(short).waiting
    small = median(timeit(lambda: call_waits(short), repeat=9, number=200))
    large = median(timeit(lambda: call_waits(long), repeat=9, number=200))
    ratio = large / small
    rows.append(["call_waits: 20,000 vs 200 messages", small * 1e6, large * 1e6, ratio, 1.5, ratio <= 1.5])
    results["call_waits"] = {"floor_us": small * 1e6, "ours_us": large * 1e6, "ratio": ratio, "target": 1.5}

    groups = 400 if QUICK else 1_600
    plain_log, waits_log = decided_log(groups, False), decided_log(groups, True)
    waits_log.validate()
    plain_log.validate()
    assert len(plain_log) == len(waits_log)
    plain_time = median(timeit(plain_log.validate, repeat=9, number=3))
    waits_time = median(timeit(waits_log.validate, repeat=9, number=3))
    ratio = waits_time / plain_time
    label = f"validate(): {len(waits_log):,} messages with waits vs plain"
    rows.append([label, plain_time * 1e3, waits_time * 1e3, ratio, 2.0, ratio <= 2.0])
    results["validate"] = {"floor_ms": plain_time * 1e3, "ours_ms": waits_time * 1e3, "ratio": ratio, "target": 2.0}

    print_table(
        "Approvals (floor and ours in ms, call_waits in us)",
        ["what", "floor", "ours", "ratio", "target", "met"],
        rows,
    )
    record("bench_approvals", results)


if __name__ == "__main__":
    main()
