"""The tool calls of one round: run concurrently, their results yielded in call order, with the calls that must wait
recorded as waiting instead (`threadline.engine.waits`); and, at the start of a turn, what the decisions made since
the last one call for (`settle`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..errors import ApprovalRequired, UserError
from ..message_list import CallWaits, MessageList
from ..message_types import INTERRUPTED_TOOL, ApprovalMessage, ToolCall, ToolMessage
from ..tools import ResolvedTools, approved_call, execute_tool_call
from ._tool_scope import ToolRound
from .plan import TurnOptions
from .waits import (
    RECOVERED_REASON,
    STOPPED_REASON,
    RoundGates,
    denial_result,
    request_entry,
    round_gates,
    started_entry,
)

if TYPE_CHECKING:
    from ..tracing.hooks import TurnSpan

__all__ = ["RoundHost", "run_tools", "settle", "with_meta"]


class RoundHost(Protocol):
    """What a round needs of the turn's host (a `threadline.engine.turn.TurnHost` is one): the tools of the
    conversation, for the approved calls that run when the next turn starts, and the log (for approval rules)."""

    @property
    def messages(self) -> MessageList: ...

    def resolve_tools(self) -> ResolvedTools: ...


_CUT_CALL = (
    "The call to {name!r} was not made: your answer reached the output token limit while writing its arguments "
    "({length:,} characters written, not yet a whole JSON object). Do the work in smaller steps, with shorter "
    "arguments per call, or answer without it."
)


async def run_tools(
    host: RoundHost,
    calls: list[ToolCall],
    tools: dict[str, Any],
    options: TurnOptions,
    span: TurnSpan | None = None,
    *,
    cut: bool = False,
    gates: RoundGates | None = None,
    approved: bool = False,
) -> AsyncIterator[ToolMessage | ApprovalMessage]:
    """Run calls concurrently; yield results in call order, each as soon as it and the earlier ones are done.

    The tools run in a context marked as ``host``'s tools (`ToolRound`): a tool writing to ``host`` is refused.

    ``cut``: the answer stopped at the output token limit, so a call whose arguments are not whole JSON was cut off
    while the model wrote them; its result says so, rather than that the model wrote invalid JSON (which only makes
    it send the same long call again, to be cut off again).

    ``gates``: calls that must wait are not run: their ``"requested"`` entries are yielded first (and a call
    approved by rule gets its ``"approved"`` entry before it runs); a tool that raises `ApprovalRequired` yields
    its request in place of a result. ``approved``: the calls were approved (`call_approved` is true in them)."""
    timeout = options.tool_timeout
    execute = execute_tool_call if span is None else span.execute_tool
    if gates is not None:
        runnable: list[ToolCall] = []
        for call in calls:
            gate = gates.check(call)
            if gate is None:
                runnable.append(call)
            elif gate.request is not None:
                yield with_meta(gate.request, options)
            elif gate.rule is not None:
                yield with_meta(gate.rule, options)
                if gate.started is not None:
                    yield with_meta(gate.started, options)  # recorded before the call runs
                runnable.append(call)
        calls = runnable
        if not calls:
            return

    def run(call: ToolCall) -> Awaitable[ToolMessage]:
        if cut and call.raw_arguments is not None:
            return _cut_call(call)
        return execute(call, tools, timeout)  # no coroutine of our own around it: this is every tool call's path

    tool_round = ToolRound(host)
    marks = _Marks(tool_round, approved)
    try:
        if len(calls) == 1:
            with marks:  # left before the yield: the caller's context is not the tool's
                try:
                    result: ToolMessage | ApprovalMessage = await run(calls[0])
                except ApprovalRequired as asked:
                    result = request_entry(calls[0], "approval", asked.reason)
            yield with_meta(result, options)
            return
        import asyncio  # already loaded here (a coroutine is running); not imported with the package

        with marks:  # each task runs in a copy of this context, made as it is created
            tasks = [asyncio.ensure_future(run(call)) for call in calls]
        try:
            for call, task in zip(calls, tasks, strict=True):
                try:
                    result = await task
                except ApprovalRequired as asked:
                    result = request_entry(call, "approval", asked.reason)
                yield with_meta(result, options)
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()
    finally:
        tool_round.end()


class _Marks:
    """The context marks of a round's tools: its `ToolRound`, and `approved_call` when the calls were approved."""

    __slots__ = ("_approved", "_round", "_running")

    def __init__(self, tool_round: ToolRound, approved: bool) -> None:
        self._round = tool_round
        self._approved = approved_call() if approved else None
        self._running: Any = None

    def __enter__(self) -> None:
        self._running = self._round.running()
        self._running.__enter__()
        if self._approved is not None:
            self._approved.__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self._approved is not None:
            self._approved.__exit__(*exc)
        self._running.__exit__(*exc)


async def settle(
    host: RoundHost, waits: CallWaits, options: TurnOptions, span: TurnSpan | None
) -> AsyncIterator[ToolMessage | ApprovalMessage]:
    """What the decisions made since the last turn call for: each denied call's error result (when a crash left
    it out), then the approved calls run, with the arguments their approval gave. An approved call of a tool that
    is not idempotent gets a ``"started"`` entry just before it runs; one that has such an entry and no result (its
    process stopped while it ran) is requested again, for a person to decide whether it runs a second time (an
    idempotent tool's runs again).

    Raises:
        UserError: when an approved call's tool is not among the conversation's tools (loaded without them):
            nothing is run or recorded, so the person's approval is not turned into an "unknown tool" error.
    """
    decided = waits.approved + waits.started
    recovering = options.recover and waits.dangling
    tools = host.resolve_tools().tools if decided or recovering else {}
    missing = sorted({call.name for call, _ in decided if call.name not in tools})
    if missing:
        raise UserError(
            f"the approved call{'s' if len(decided) > 1 else ''} "
            f"{', '.join(call.id for call, _ in decided if call.name in missing)} cannot run: this "
            f"conversation has no tool {', '.join(map(repr, missing))} (load it with its tools, e.g. "
            "Conversation.load(id, store, ConversationConfig(tools=[...])), then resume); nothing was run"
        )
    for call, decision in waits.denied:
        yield with_meta(denial_result(call, decision.by, decision.reason), options)
    reruns: list[ToolCall] = []
    if recovering:
        # The turn's process died with these calls unanswered (a durable worker's recovery): an idempotent tool's
        # runs again (under the same approval rules as any call), another waits for a person, an unknown one is
        # answered as a crash's always is.
        for call in waits.dangling:
            tool = tools.get(call.name)
            if tool is None:
                yield with_meta(interrupted(call), options)
            elif tool.idempotent:
                reruns.append(call)
            else:
                yield with_meta(request_entry(call, "approval", RECOVERED_REASON), options)
    if reruns:
        gates = round_gates(tools, options.approval, host.messages)
        async for message in run_tools(host, reruns, tools, options, span, gates=gates):
            yield message
    runs = list(waits.approved)
    for call, decision in waits.started:
        if tools[call.name].idempotent:
            runs.append((call, decision))
        else:
            yield with_meta(request_entry(call, "approval", STOPPED_REASON), options)
    if not runs:
        return
    for call, _ in waits.approved:
        if not tools[call.name].idempotent:
            yield with_meta(started_entry(call), options)  # recorded before the call runs
    calls = [
        call if decision.arguments is None else ToolCall(id=call.id, name=call.name, arguments=decision.arguments)
        for call, decision in runs
    ]
    async for message in run_tools(host, calls, tools, options, span, approved=True):
        yield message


def interrupted(call: ToolCall) -> ToolMessage:
    """The ``interrupted`` error result of a call a crash left unanswered (as `threadline.engine.turn`'s repair)."""
    return ToolMessage(tool_call_id=call.id, tool_name=call.name, content=INTERRUPTED_TOOL, is_error=True)


async def _cut_call(call: ToolCall) -> ToolMessage:
    """The result of a call cut off by the output token limit while its arguments were written (not made)."""
    length = len(call.raw_arguments or "")
    return ToolMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=_CUT_CALL.format(name=call.name, length=length),
        is_error=True,
    )


_M = TypeVar("_M", ToolMessage, ApprovalMessage, ToolMessage | ApprovalMessage)


def with_meta(message: _M, options: TurnOptions) -> _M:
    if options.meta is not None:
        message.meta = options.meta
    return message
